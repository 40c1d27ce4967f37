import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock, isBreakwaterError, toProblem } from '../core/index.js';
import { constantBackoff } from './backoff.js';
import { bulkhead } from './bulkhead.js';
import { circuitBreaker } from './circuit-breaker.js';
import { ConsecutiveWindow } from './breaker-windows.js';
import { pipeline } from './pipeline.js';
import { rateLimit } from './rate-limit/index.js';
import { retry } from './retry.js';
import { timeout } from './timeout.js';
import type { Next, Policy, PolicyContext, PolicyFn } from './types.js';
import { optionsErrorOf } from '../../test/support/options.js';

/** A policy that records the order it runs in and the context it sees. */
function tracer(name: string, log: string[]): Policy {
  return {
    execute<T>(fn: PolicyFn<T>): Promise<T> {
      return pipeline(this).execute(fn);
    },
    run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
      log.push(`${name}>${ctx.attempt}`);
      return next.invoke(ctx, index).then((value) => {
        log.push(`${name}<`);
        return value;
      });
    },
  };
}

describe('pipeline', () => {
  it('runs policies outer to inner and flattens nested pipelines', async () => {
    const log: string[] = [];
    const inner = pipeline(tracer('b', log), tracer('c', log));
    const outer = pipeline(tracer('a', log), inner, tracer('d', log));
    expect(outer.policies).toHaveLength(4);
    await expect(outer.execute(() => 'ok')).resolves.toBe('ok');
    expect(log).toEqual(['a>1', 'b>1', 'c>1', 'd>1', 'd<', 'c<', 'b<', 'a<']);
  });

  it('a pipeline used as a layer continues into the outer pipeline after its own policies', async () => {
    const log: string[] = [];
    const inner = pipeline(tracer('b', log), tracer('c', log));
    const viaRun = pipeline(tracer('a', log));
    // Use `inner` through its `run` (not flattened) by wrapping it in a plain object policy.
    const layer: Policy = {
      execute: (fn) => inner.execute(fn),
      run: (ctx, next, i) => inner.run(ctx, next, i),
    };
    await expect(pipeline(viaRun, layer, tracer('z', log)).execute(() => 1)).resolves.toBe(1);
    expect(log).toEqual(['a>1', 'b>1', 'c>1', 'z>1', 'z<', 'c<', 'b<', 'a<']);
  });

  it('gives each retry attempt its number in ctx.attempt, through inner policies', async () => {
    const clock = new FakeClock();
    const log: string[] = [];
    const seen: number[] = [];
    const p = pipeline(retry({ maxAttempts: 3, backoff: constantBackoff(0), clock }), tracer('t', log));
    const result = await p.execute((ctx) => {
      seen.push(ctx.attempt);
      if (ctx.attempt < 3) throw new BreakwaterError('upstream_unavailable');
      return 'third time';
    });
    expect(result).toBe('third time');
    expect(seen).toEqual([1, 2, 3]);
    expect(log).toEqual(['t>1', 't>2', 't>3', 't<']);
  });

  it('a timeout inside a retry loop of 15 attempts leaves no abort listener on a long-lived parent signal and no timer', async () => {
    const clock = new FakeClock();
    const parent = new AbortController();
    const p = pipeline(
      retry({ maxAttempts: 15, backoff: constantBackoff(10), clock }),
      timeout({ timeoutMs: 100, clock }),
    );
    const listenersDuringAttempts: number[] = [];
    let attempts = 0;
    const result = p
      .execute((ctx) => {
        attempts++;
        // Each attempt listens to its own signal (as fetch does) and hangs until the timeout aborts it.
        const { signal } = ctx;
        listenersDuringAttempts.push(getEventListeners(parent.signal, 'abort').length);
        return new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
      }, parent.signal)
      .catch((e: unknown) => e);
    await clock.tickAsync(15 * 100 + 14 * 10);
    const error = (await result) as BreakwaterError;
    expect(error.code).toBe('timeout');
    expect(attempts).toBe(15);
    // While an attempt runs, only its own timeout listens to the parent: earlier ones are already gone.
    expect(listenersDuringAttempts).toEqual(Array.from({ length: 15 }, () => 1));
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    await clock.tickAsync(100);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a layer that throws synchronously yields a rejected promise and leaves no timer behind', async () => {
    const clock = new FakeClock();
    const bug = new Error('hand-written policy bug');
    const thrower: Policy = {
      execute: () => Promise.reject(bug),
      run: () => {
        throw bug;
      },
    };
    const limit = timeout({ timeoutMs: 100, clock });
    let result: Promise<unknown> | undefined;
    expect(() => {
      result = pipeline(limit, thrower).execute(() => 'never');
    }).not.toThrow();
    await expect(result).rejects.toBe(bug);
    expect(limit.timers.size).toBe(0);
    expect(() => pipeline(limit, undefined as unknown as Policy)).toThrow(
      new RangeError('pipeline: argument 2 must be a policy (with a run method), got undefined'),
    );
    const caught = optionsErrorOf(() => pipeline(1 as unknown as Policy, limit, {} as Policy));
    expect([caught.code, caught.owner]).toEqual(['invalid_options', 'pipeline']);
    expect(caught.problems).toEqual([
      { option: 'argument 1', rule: 'a policy (with a run method)', value: 1 },
      { option: 'argument 3', rule: 'a policy (with a run method)', value: {} },
    ]);
    expect(caught.message).toBe(
      'pipeline: argument 1 must be a policy (with a run method), got 1; argument 3 must be a policy ' +
        '(with a run method), got an object',
    );
  });

  it('every rejection a policy makes is a BreakwaterError with a stable code and a problem+json form', async () => {
    const clock = new FakeClock();
    const rejections: unknown[] = [];
    const catchIt = (p: Promise<unknown>): Promise<void> =>
      p.then(
        () => undefined,
        (e: unknown) => void rejections.push(e),
      );

    const breaker = circuitBreaker({ name: 'gift-service', window: new ConsecutiveWindow(1), clock });
    breaker.isolate();
    await catchIt(breaker.execute(() => 1));

    const full = bulkhead({ maxConcurrent: 1, clock });
    const hold = full.execute(() => new Promise<void>((resolve) => clock.setTimeout(resolve, 10)));
    await catchIt(full.execute(() => 1));

    const limit = rateLimit({ algorithm: { type: 'fixed_window', limit: 1, windowMs: 60_000 }, clock });
    await limit.execute(() => 1);
    await catchIt(limit.execute(() => 1));

    const slow = timeout({ timeoutMs: 5, clock });
    const timedOut = catchIt(slow.execute(() => new Promise(() => {})));
    await clock.tickAsync(10);
    await Promise.all([timedOut, hold]);

    expect(rejections.map((e) => (isBreakwaterError(e) ? e.code : String(e)))).toEqual([
      'circuit_open',
      'bulkhead_full',
      'rate_limited',
      'timeout',
    ]);
    expect(rejections.map((e) => toProblem(e).status)).toEqual([503, 503, 429, 504]);
  });
});

describe('retries against a real HTTP server', () => {
  let server: Server;
  let base: string;
  const hits = new Map<string, number>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      const status = Number(req.url!.split('/')[1]);
      hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** What an upstream client does: a non-2xx response becomes an error that carries status and headers. */
  class HttpStatusError extends Error {
    constructor(
      readonly status: number,
      readonly headers: Headers,
    ) {
      super(`HTTP ${status}`);
    }
  }

  async function call(path: string, maxAttempts: number): Promise<number> {
    const p = retry({ maxAttempts, backoff: constantBackoff(0) });
    try {
      await p.execute(async ({ signal }) => {
        const res = await fetch(`${base}${path}`, { signal });
        await res.arrayBuffer();
        if (!res.ok) throw new HttpStatusError(res.status, res.headers);
      });
    } catch {
      // counted below
    }
    return hits.get(path) ?? 0;
  }

  it('calls a 404 (or any non-retryable 4xx) exactly once whatever the retry configuration', async () => {
    expect(await call('/404/a', 10)).toBe(1);
    expect(await call('/400/a', 5)).toBe(1);
    expect(await call('/422/a', 3)).toBe(1);
    expect(await call('/401/a', 5)).toBe(1);
  });

  it('retries 408, 425, 429, 500, 502, 503 and 504 up to maxAttempts', async () => {
    for (const status of [408, 425, 429, 500, 502, 503, 504]) {
      expect(await call(`/${status}/b`, 3)).toBe(3);
    }
  });
});

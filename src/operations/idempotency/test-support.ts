/**
 * The `Idempotency-Key` route suite, run with a real Fastify app on every backend (SQLite in
 * `route.test.ts`, PostgreSQL in `route.postgres.test.ts`).
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { fastify, type FastifyInstance, type FastifyReply, type LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BreakwaterError, FakeClock } from '../../core/index.js';
import type { Store } from '../../store/index.js';
import { registerIdempotency } from './route.js';
import { expectOptionsError } from '../../../test/support/options.js';

const ORDER = { product_id: 'p1', quantity: 1 };

/** A gate a handler waits on. */
function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** Registers the suite; `open` gets a fresh store per test, `close` is called after it. */
export function idempotencyRouteSuite(open: (clock: FakeClock) => Promise<Store>): void {
  let clock: FakeClock;
  let store: Store;
  let app: FastifyInstance;
  let runs: number;
  let hold: { wait: Promise<void>; open(): void } | undefined;
  let entered: (() => void) | undefined;
  let mode: 'ok' | 'throw' | 'unknown' | '503' | '500' | 'stream' | 'hijack';

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2025, 0, 1));
    store = await open(clock);
    runs = 0;
    hold = undefined;
    entered = undefined;
    mode = 'ok';
    app = fastify();
    registerIdempotency(app, { store: store.idempotency, clock, replayHeaders: ['X-Order-Version'] });
    const handler = async (request: { body: unknown }, reply: FastifyReply) => {
      runs++;
      const n = runs;
      entered?.();
      if (hold !== undefined) await hold.wait;
      if (mode === 'throw') throw new Error('handler failed');
      if (mode === 'unknown') throw new BreakwaterError('outcome_unknown');
      if (mode === '503') return reply.code(503).send({ busy: true });
      if (mode === '500') return reply.code(500).send({ failed: n });
      if (mode === 'stream') return reply.type('text/plain').send(Readable.from(['a', 'b']));
      if (mode === 'hijack') {
        reply.hijack();
        reply.raw.writeHead(200, { 'content-type': 'text/plain' });
        reply.raw.end('raw');
        return reply;
      }
      return reply
        .code(201)
        .header('location', `/orders/${n}`)
        .header('set-cookie', `session=${n}`)
        .header('x-order-version', '7')
        .header('x-request-id', `r${n}`)
        .send({ id: String(n), order: request.body });
    };
    app.post('/orders', { config: { idempotency: { required: true } } }, handler);
    app.post('/notes', { config: { idempotency: true } }, handler);
    app.post('/plain', handler);
    await app.ready();
  });

  afterEach(async () => {
    hold?.open();
    await app.close();
    await store.close();
  });

  const post = (
    key: string | string[] | undefined,
    body: unknown = ORDER,
    headers: Record<string, string> = {},
    url = '/orders',
  ): Promise<LightMyRequestResponse> =>
    app.inject({
      method: 'POST',
      url,
      payload: body as object,
      headers: { ...headers, ...(key === undefined ? {} : { 'idempotency-key': key }) },
    });

  const problem = (response: LightMyRequestResponse): { code: string; status: number } => {
    expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    return response.json();
  };

  describe('the key', () => {
    it('accepts the quoted and the bare form as one key', async () => {
      const first = await post('"order-1"');
      expect(first.statusCode).toBe(201);
      const second = await post('order-1');
      expect(second.statusCode).toBe(201);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(runs).toBe(1);
    });

    it.each([
      ['empty', ''],
      ['256 characters long', 'k'.repeat(256)],
      ['sent twice', ['"a"', '"b"']],
      ['malformed', '"abc'],
    ])('answers 400 idempotency_key_invalid to a key %s, without running', async (_name, key) => {
      const response = await post(key);
      expect(response.statusCode).toBe(400);
      expect(problem(response)).toMatchObject({
        code: 'idempotency_key_invalid',
        status: 400,
        instance: '/orders',
      });
      expect(runs).toBe(0);
    });

    it('accepts a 255-character key', async () => {
      expect((await post('k'.repeat(255))).statusCode).toBe(201);
    });

    it('answers 400 idempotency_key_missing on a required route', async () => {
      const response = await post(undefined);
      expect(response.statusCode).toBe(400);
      expect(problem(response)).toMatchObject({
        code: 'idempotency_key_missing',
        detail: 'This request needs an Idempotency-Key header so it can be safely retried.',
      });
      expect(runs).toBe(0);
    });

    it('runs every keyless request on an optional route, and leaves routes without the option alone', async () => {
      expect((await post(undefined, ORDER, {}, '/notes')).statusCode).toBe(201);
      expect((await post(undefined, ORDER, {}, '/notes')).statusCode).toBe(201);
      expect((await post('k', ORDER, {}, '/plain')).statusCode).toBe(201);
      expect((await post('k', ORDER, {}, '/plain')).headers['idempotent-replayed']).toBeUndefined();
      expect(runs).toBe(4);
    });
  });

  describe('replay', () => {
    it('replays the status, body, location and allowed headers with Idempotent-Replayed: true', async () => {
      const first = await post('k1');
      expect(first.statusCode).toBe(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const replay = await post('k1');
      expect(replay.statusCode).toBe(201);
      expect(replay.body).toBe(first.body);
      expect(replay.json()).toEqual({ id: '1', order: ORDER });
      expect(replay.headers['location']).toBe('/orders/1');
      expect(replay.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(replay.headers['x-order-version']).toBe('7');
      expect(replay.headers['idempotent-replayed']).toBe('true');
      // Never a session, nor a header outside the allow-list.
      expect(replay.headers['set-cookie']).toBeUndefined();
      expect(replay.headers['x-request-id']).toBeUndefined();
      expect(runs).toBe(1);
    });

    it('replays the same request with its body keys in another order', async () => {
      await post('k1', { product_id: 'p1', quantity: 1 });
      expect((await post('k1', { quantity: 1, product_id: 'p1' })).headers['idempotent-replayed']).toBe(
        'true',
      );
    });

    it('answers 422 idempotency_key_mismatch to the key with another body', async () => {
      await post('k1');
      const response = await post('k1', { product_id: 'p2', quantity: 1 });
      expect(response.statusCode).toBe(422);
      expect(problem(response).code).toBe('idempotency_key_mismatch');
      expect(runs).toBe(1);
    });

    it('scopes keys per Authorization: each client runs and replays its own', async () => {
      const alice = { authorization: 'Bearer alice' };
      const bob = { authorization: 'Bearer bob' };
      const a = await post('shared', { product_id: 'a', quantity: 1 }, alice);
      const b = await post('shared', { product_id: 'b', quantity: 2 }, bob);
      expect([a.statusCode, b.statusCode]).toEqual([201, 201]);
      expect(runs).toBe(2);
      const a2 = await post('shared', { product_id: 'a', quantity: 1 }, alice);
      const b2 = await post('shared', { product_id: 'b', quantity: 2 }, bob);
      expect(a2.json()).toEqual({ id: '1', order: { product_id: 'a', quantity: 1 } });
      expect(b2.json()).toEqual({ id: '2', order: { product_id: 'b', quantity: 2 } });
      expect([a2.headers['idempotent-replayed'], b2.headers['idempotent-replayed']]).toEqual([
        'true',
        'true',
      ]);
      // Bob's body under Alice's key is Alice's mismatch, never Bob's response.
      expect((await post('shared', { product_id: 'b', quantity: 2 }, alice)).statusCode).toBe(422);
      // Anonymous is a scope of its own.
      expect((await post('shared', { product_id: 'c', quantity: 3 })).statusCode).toBe(201);
      expect(runs).toBe(3);
      expect((await store.idempotency.get('anonymous', 'shared'))?.state).toBe('completed');
      // Stored under a hash of the credential, never the credential.
      const aliceScope = `token:${createHash('sha256').update('Bearer alice').digest('hex')}`;
      expect((await store.idempotency.get(aliceScope, 'shared'))?.response?.status).toBe(201);
    });
  });

  describe('concurrency', () => {
    it('runs the handler once for 50 concurrent requests: one 201, 49 × 409 while it runs', async () => {
      hold = gate();
      const early: LightMyRequestResponse[] = [];
      let allButOne!: () => void;
      const answered = new Promise<void>((resolve) => (allButOne = resolve));
      const responses = Array.from({ length: 50 }, () =>
        post('same').then((response) => {
          early.push(response);
          if (early.length === 49) allButOne();
          return response;
        }),
      );
      // Every request but the running one is answered while the handler is still held.
      await answered;
      expect(runs).toBe(1);
      expect(early.map((r) => r.statusCode)).toEqual(Array(49).fill(409));
      expect(problem(early[0]!)).toMatchObject({ code: 'idempotency_in_progress', retry_after_ms: 1_000 });
      expect(early[0]!.headers['retry-after']).toBe('1');
      hold.open();
      const all = await Promise.all(responses);
      expect(all.filter((r) => r.statusCode === 201)).toHaveLength(1);
      expect(all.filter((r) => r.statusCode === 409)).toHaveLength(49);
      expect(runs).toBe(1);
      expect((await post('same')).headers['idempotent-replayed']).toBe('true');
    });

    it('runs the handler once for 50 concurrent requests without holding it: 201 + 409s + replays = 50', async () => {
      const all = await Promise.all(Array.from({ length: 50 }, () => post('same')));
      const fresh = all.filter((r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === undefined);
      const replays = all.filter((r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === 'true');
      const busy = all.filter((r) => r.statusCode === 409);
      expect(fresh).toHaveLength(1);
      expect(fresh.length + replays.length + busy.length).toBe(50);
      expect(replays.every((r) => r.body === fresh[0]!.body)).toBe(true);
      expect(runs).toBe(1);
    });
  });

  describe('settling', () => {
    it('takes over a key whose lock expired (FakeClock), and the late owner does not overwrite it', async () => {
      hold = gate();
      let inside!: () => void;
      const started = new Promise<void>((resolve) => (inside = resolve));
      entered = inside;
      const stuck = post('k1');
      await started;
      expect((await post('k1')).statusCode).toBe(409);
      clock.tick(59_999);
      expect((await post('k1')).headers['retry-after']).toBe('1');
      clock.tick(1);
      const previous = hold;
      hold = undefined;
      const takeover = await post('k1');
      expect(takeover.statusCode).toBe(201);
      expect(takeover.json()).toMatchObject({ id: '2' });
      previous.open();
      const late = await stuck;
      expect(late.statusCode).toBe(201);
      expect(late.json()).toMatchObject({ id: '1' });
      expect((await post('k1')).json()).toMatchObject({ id: '2' });
      expect(runs).toBe(2);
    });

    it("after Fastify's handler timeout the record stays in progress (409) until its lock lapses", async () => {
      const slow = fastify({ handlerTimeout: 50 });
      registerIdempotency(slow, { store: store.idempotency, clock, lockMs: 60_000 });
      let hang = true;
      let slowRuns = 0;
      slow.post('/slow', { config: { idempotency: true } }, async () => {
        slowRuns++;
        if (hang) await new Promise<void>(() => undefined); // still running after the 503
        return { done: slowRuns };
      });
      await slow.ready();
      const send = () =>
        slow.inject({ method: 'POST', url: '/slow', headers: { 'idempotency-key': 'slow-1' }, payload: {} });
      expect((await send()).statusCode).toBe(503);
      expect((await store.idempotency.get('anonymous', 'slow-1'))?.state).toBe('in_progress');
      expect((await send()).statusCode).toBe(409);
      // The lock lapsed (its owner is presumed gone): the next request takes the key over and runs.
      hang = false;
      clock.tick(60_000);
      const retry = await send();
      expect([retry.statusCode, retry.json(), slowRuns]).toEqual([200, { done: 2 }, 2]);
      await slow.close();
    });

    it('stores the 500 of a handler that threw (it may have done its work); the retry gets the replay', async () => {
      mode = 'throw';
      const failed = await post('k1');
      expect(failed.statusCode).toBe(500);
      mode = 'ok';
      const retry = await post('k1');
      expect([retry.statusCode, retry.headers['idempotent-replayed'], retry.body]).toEqual([
        500,
        'true',
        failed.body,
      ]);
      expect(runs).toBe(1);
    });

    it('stores an unknown outcome the handler threw, and replays it', async () => {
      mode = 'unknown';
      const first = await post('k1');
      expect(first.statusCode).toBe(504);
      mode = 'ok';
      const replay = await post('k1');
      expect(replay.statusCode).toBe(504);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toBe(first.body);
      expect(runs).toBe(1);
    });

    it('releases after a 503 answer and stores a 500 answer', async () => {
      mode = '503';
      expect((await post('k1')).statusCode).toBe(503);
      mode = '500';
      expect((await post('k1')).statusCode).toBe(500);
      mode = 'ok';
      const replay = await post('k1');
      expect([replay.statusCode, replay.headers['idempotent-replayed']]).toEqual([500, 'true']);
      expect(replay.json()).toEqual({ failed: 2 });
      expect(runs).toBe(2);
    });

    it('releases the key of a streamed answer, which cannot be stored', async () => {
      mode = 'stream';
      expect((await post('k1')).body).toBe('ab');
      expect((await post('k1')).body).toBe('ab');
      expect(runs).toBe(2);
    });

    it('releases the key of a hijacked reply, which bypasses onSend', async () => {
      mode = 'hijack';
      expect((await post('k1')).body).toBe('raw');
      // onResponse runs when the raw response finishes, which may be after inject has resolved.
      await vi.waitFor(async () => expect(await store.idempotency.get('anonymous', 'k1')).toBeUndefined());
      expect((await post('k1')).body).toBe('raw');
      expect(runs).toBe(2);
    });
  });

  describe('over a socket', () => {
    it('stores the answer of a client that hung up, and replays it to its retry', async () => {
      let stored!: (ok: boolean) => void;
      const completed = new Promise<boolean>((resolve) => (stored = resolve));
      const idempotency = store.idempotency;
      const live = fastify();
      // The real store, with a window on when complete has run.
      registerIdempotency(live, {
        store: {
          begin: (claim) => idempotency.begin(claim),
          complete: async (ref, response) => {
            const ok = await idempotency.complete(ref, response);
            stored(ok);
            return ok;
          },
          release: (ref) => idempotency.release(ref),
          get: (scope, key) => idempotency.get(scope, key),
          prune: (limit) => idempotency.prune(limit),
        },
        clock,
      });
      const held = gate();
      let inside!: () => void;
      const started = new Promise<void>((resolve) => (inside = resolve));
      let liveRuns = 0;
      live.post('/orders', { config: { idempotency: true } }, async (_request, reply) => {
        liveRuns++;
        inside();
        await held.wait;
        return reply.code(201).header('location', '/orders/1').send({ id: '1' });
      });
      const address = await live.listen({ port: 0, host: '127.0.0.1' });
      try {
        const send = (signal?: AbortSignal): Promise<Response> =>
          fetch(`${address}/orders`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': '"hung-up"' },
            body: JSON.stringify(ORDER),
            signal,
          });
        const abort = new AbortController();
        const first = send(abort.signal).catch((error: unknown) => error);
        await started;
        abort.abort();
        expect(await first).toBeInstanceOf(Error);
        held.open();
        expect(await completed).toBe(true);
        const retry = await send();
        expect(retry.status).toBe(201);
        expect(retry.headers.get('idempotent-replayed')).toBe('true');
        expect(retry.headers.get('location')).toBe('/orders/1');
        expect(await retry.json()).toEqual({ id: '1' });
        expect(liveRuns).toBe(1);
      } finally {
        held.open();
        await live.close();
      }
    });
  });

  describe('record lifetime (a ttlMs shorter than the run would defeat idempotency)', () => {
    /** An app whose warn lines are kept, with one `POST /slow` route held until `release()`. */
    async function loggedApp(options: { lockMs: number; ttlMs: number }) {
      const lines: { msg: string; [field: string]: unknown }[] = [];
      const logged = fastify({
        logger: { level: 'warn', stream: { write: (line: string) => void lines.push(JSON.parse(line)) } },
      });
      registerIdempotency(logged, { store: store.idempotency, clock, ...options });
      let slowRuns = 0;
      let release!: () => void;
      let inside!: () => void;
      const started = new Promise<void>((resolve) => (inside = resolve));
      logged.post('/slow', { config: { idempotency: true } }, async () => {
        const run = ++slowRuns;
        if (run === 1) {
          inside();
          await new Promise<void>((resolve) => (release = resolve));
        }
        return { run };
      });
      await logged.ready();
      const send = () =>
        logged.inject({ method: 'POST', url: '/slow', headers: { 'idempotency-key': 'k' }, payload: {} });
      return { app: logged, lines, send, started, release: () => release(), runs: () => slowRuns };
    }

    it('refuses ttlMs 1000 under the default 60 s lock, at registration and on a route', async () => {
      const other = fastify();
      expect(() => registerIdempotency(other, { store: store.idempotency, ttlMs: 1_000 })).toThrow(
        new RangeError(
          'registerIdempotency: ttlMs must be greater than lockMs (60000 ms): a record must outlive the lock of the run that holds it, got 1000',
        ),
      );
      registerIdempotency(other, { store: store.idempotency, ttlMs: 120_000 });
      expect(() => other.post('/a', { config: { idempotency: { ttlMs: 1_000 } } }, async () => 'a')).toThrow(
        'registerIdempotency (route POST /a): ttlMs must be greater than lockMs (60000 ms)',
      );
      // A route's lock is checked against the lifetime it inherits.
      expect(() =>
        other.post('/b', { config: { idempotency: { lockMs: 120_000 } } }, async () => 'b'),
      ).toThrow(
        'registerIdempotency (route POST /b): ttlMs must be greater than lockMs (120000 ms): a record must outlive the lock of the run that holds it, got 120000',
      );
      other.post('/c', { config: { idempotency: { lockMs: 5_000, ttlMs: 5_001 } } }, async () => 'c');
      await other.close();
    });

    it('a record that expires under a run (a run longer than its lock and its ttl) is logged as expired, not taken over', async () => {
      const slow = await loggedApp({ lockMs: 1_000, ttlMs: 2_000 });
      try {
        const first = slow.send();
        await slow.started;
        await clock.tickAsync(2_000);
        slow.release();
        expect((await first).json()).toEqual({ run: 1 });
        const notStored = slow.lines.filter((l) => l.msg.includes('not stored'));
        expect(notStored).toEqual([
          expect.objectContaining({
            level: 40,
            msg: 'idempotency record expired before this request finished: its response was not stored',
            idempotency_scope: 'anonymous',
            ttl_ms: 2_000,
          }),
        ]);
        expect(slow.lines.some((l) => l.msg.includes('taken over'))).toBe(false);
      } finally {
        await slow.app.close();
      }
    });

    it('a record taken over after its lock ran out is logged as taken over', async () => {
      const slow = await loggedApp({ lockMs: 1_000, ttlMs: 60_000 });
      try {
        const first = slow.send();
        await slow.started;
        await clock.tickAsync(1_000);
        const takeover = await slow.send();
        expect(takeover.json()).toEqual({ run: 2 });
        slow.release();
        expect((await first).json()).toEqual({ run: 1 });
        expect(slow.lines.map((l) => [l.level, l.msg, l['lock_ms']])).toEqual([
          [40, 'idempotency key taken over after its lock ran out', 1_000],
          [40, 'idempotency key was taken over after its lock ran out: this response was not stored', 1_000],
        ]);
        expect((await slow.send()).json()).toEqual({ run: 2 });
      } finally {
        await slow.app.close();
      }
    });
  });

  describe('registration', () => {
    it('refuses set-cookie as a replay header, and a bad route config when the route is declared', async () => {
      const other = fastify();
      expect(() =>
        registerIdempotency(other, { store: store.idempotency, replayHeaders: ['Set-Cookie'] }),
      ).toThrow(RangeError);
      registerIdempotency(other, { store: store.idempotency });
      expect(() => other.post('/x', { config: { idempotency: { lockMs: -1 } } }, async () => 'x')).toThrow(
        'registerIdempotency (route POST /x): lockMs must be a finite number > 0, got -1',
      );
      await other.close();
    });

    it('reports every bad option at once, in one OptionsError, at registration and on a route', async () => {
      const other = fastify();
      expectOptionsError(
        () =>
          registerIdempotency(other, {
            store: store.idempotency,
            replayHeaders: ['Set-Cookie'],
            required: 'yes' as never,
            fields: { query: 1, body: 'some' } as never,
            lockMs: 0,
          }),
        {
          owner: 'registerIdempotency',
          options: ['replayHeaders', 'required', 'fields.query', 'fields.body', 'lockMs'],
          message:
            "registerIdempotency: replayHeaders must be header names other than set-cookie and hop-by-hop ones, got ['Set-Cookie']; " +
            "required must be a boolean, got 'yes'; " +
            'fields.query must be a boolean, got 1; ' +
            "fields.body must be 'all', 'none' or an array of member names, got 'some'; " +
            'lockMs must be a finite number > 0, got 0',
        },
      );
      registerIdempotency(other, { store: store.idempotency });
      expect(() =>
        other.post(
          '/y',
          { config: { idempotency: { scope: 'ip' as never, lockMs: 90_000_000 } } },
          async () => 'y',
        ),
      ).toThrow(
        new RangeError(
          "registerIdempotency (route POST /y): scope must be a function, got 'ip'; " +
            'ttlMs must be greater than lockMs (90000000 ms): a record must outlive the lock of the run that holds it, got 86400000',
        ),
      );
      await other.close();
    });
  });
}

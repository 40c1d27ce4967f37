/**
 * Attacks on the pushed stream (src/ai/step/execute.ts, provider-call.ts, stream/sse.ts, http/respond.ts): SseFrameSplitter under any chunking against a reference
 * splitter, StreamAnswer's contract with a hand-written sink (re-entrancy, cancel, resume, spend), and the
 * gateway end to end (pipelined keep-alive requests, a client leaving while the provider is paused).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { getEventListeners } from 'node:events';
import { Client } from 'undici';
import { describe, expect, it } from 'vitest';
import {
  createAiGateway,
  executeStep,
  MemoryCounterStore,
  readSpendState,
  spendWindowStart,
  type SpendRule,
} from '../../src/ai/index.js';
import { SseFrameSplitter, type StreamFindings } from '../../src/ai/stream/sse.js';
import type { AiRequest, FrameSink, StreamStepAnswer } from '../../src/ai/types.js';
import { FakeClock } from '../../src/core/index.js';
import { ask, startGateway, until, useCleanups } from '../ai/support.js';
import { ProviderRegistry } from '../../src/ai/providers.js';
import { callProvider } from '../../src/ai/step/attempt.js';
import { seeded } from '../support/random.js';
import { framesOf } from '../support/sse.js';
import { readBody, scriptedProvider, writeApart } from './ai-support.js';
import { stalled } from '../support/stalled.js';

const defer = useCleanups();
const DAY = 86_400_000;
const RULE: SpendRule = { name: 'daily', budgetUsd: 1, windowMs: DAY, scope: { by: 'provider' } };
// 2 USD per million output tokens: max_tokens 50 reserves 100 micro-USD; 7 completion tokens cost 14.
const PRICES = { 'p/m': { inputPerMTok: 0, outputPerMTok: 2 } };
const USAGE = 'data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":7}}';

/** A random SSE body: numbered events of every kind, with `eol` line ends, maybe no final blank line. */
function script(rand: () => number, eol: string): string {
  const kinds = [
    (i: number) => [`data: {"choices":[{"delta":{"content":"${i} é€😀"}}]}`],
    (i: number) => [`data: ${i} first`, `data: ${i} second`],
    (i: number) => [`: ping ${i}`],
    (i: number) => [`event: note`, `id: ${i}`, `data: ${i}`],
  ];
  const events: string[][] = [];
  const n = 3 + Math.floor(rand() * 12);
  for (let i = 0; i < n; i++) events.push(kinds[Math.floor(rand() * kinds.length)]!(i));
  events.push([USAGE], ['data: [DONE]']);
  const text = events.map((lines) => lines.join(eol) + eol + eol).join('');
  return rand() < 0.3 ? text.slice(0, -eol.length * (rand() < 0.5 ? 1 : 2)) : text;
}

/** What a client must see from `text`: its frames, line ends as `\n`, the usage frame left out if stripped. */
function reference(text: string, stripUsage: boolean): string[] {
  return text
    .replace(/\r\n?/g, '\n')
    .split('\n\n')
    .map(canonical)
    .filter((f) => f !== '' && !(stripUsage && f === USAGE));
}

/** A frame without the blank lines around it (an empty line before a frame dispatches nothing). */
const canonical = (frame: string): string => frame.replace(/^\n+|\n+$/g, '');

/**
 * `bytes` cut at random places (inside UTF-8 characters too), or (one seed in three) only between frames, several
 * to a chunk; `keepCrlf`: never between `\r` and `\n`.
 */
function cut(bytes: Buffer, rand: () => number, keepCrlf: boolean): Buffer[] {
  const pieces: Buffer[] = [];
  const betweenFrames = rand() < 0.33;
  const text = bytes.toString('latin1');
  let start = 0;
  for (let i = 1; i < bytes.length; i++) {
    if (keepCrlf && bytes[i - 1] === 0x0d && bytes[i] === 0x0a) continue;
    if (betweenFrames ? !/(\r\n?|\n){2}$/.test(text.slice(0, i)) || rand() < 0.5 : rand() > 0.15) continue;
    pieces.push(bytes.subarray(start, i));
    start = i;
  }
  pieces.push(bytes.subarray(start));
  return pieces;
}

/** Runs the splitter over `chunks`; the sink answers false at random (every frame must still be written). */
function split(chunks: Buffer[], stripUsage: boolean, rand: () => number) {
  const writes: string[] = [];
  const findings: StreamFindings = { usage: undefined, done: false, textBytes: 0 };
  const splitter = new SseFrameSplitter(stripUsage, findings, {
    write: (frames) => (writes.push(frames), rand() < 0.5),
  });
  for (const chunk of chunks) splitter.push(chunk);
  splitter.end();
  return { frames: framesOf(writes), findings };
}

describe('SseFrameSplitter under any chunking (seeded, against a reference splitter)', () => {
  it.each(['\n', '\r', '\r\n'])(
    'line end %j: every frame once, in order, whole; usage read and stripped',
    (eol) => {
      for (let seed = 1; seed <= 300; seed++) {
        const rand = seeded(seed);
        const text = script(rand, eol);
        const stripUsage = rand() < 0.5;
        const { frames, findings } = split(cut(Buffer.from(text), rand, true), stripUsage, rand);
        const context = `seed ${seed} ${JSON.stringify(text)}`;
        expect(
          frames.every((f) => f.endsWith('\n\n') && !f.slice(0, -2).includes('\n\n')),
          context,
        ).toBe(true);
        expect(
          frames.map(canonical).filter((f) => f !== ''),
          context,
        ).toEqual(reference(text, stripUsage));
        expect(findings, context).toEqual({
          usage: { promptTokens: 3, completionTokens: 7, cachedTokens: 0 },
          done: true,
          textBytes: 0, // not asked to count
        });
      }
    },
  );

  // Found by this suite (fixed): a `\r\n` split between two chunks counted as two line ends (`\r` -> `\n`,
  // then `\n`): a multi-line event became two events, and the blank line of `\r\n\r\n` split after its third
  // byte leaked a stray `\n` in front of the next frame. The splitter now remembers a chunk ending in `\r`.
  it('a CRLF split between chunks is one line end: a two-line event stays one event', () => {
    const { frames } = split(
      ['data: a\r', '\ndata: b\r\n\r', '\ndata: c\r\n\r\n'].map((s) => Buffer.from(s)),
      false,
      () => 0,
    );
    expect(frames).toEqual(['data: a\ndata: b\n\n', 'data: c\n\n']);
  });
});

/** A hand-written sink: records every call; `onWrite` answers (and may re-enter the answer). */
class Sink implements FrameSink {
  readonly writes: string[] = [];
  readonly calls: string[] = [];
  readonly ends: unknown[] = [];
  constructor(private readonly onWrite: (frames: string, sink: Sink) => boolean = () => true) {}
  /** The frames written, one by one. */
  get frames(): string[] {
    return framesOf(this.writes);
  }
  write(frames: string): boolean {
    this.calls.push(this.ends.length > 0 ? 'write after end' : 'write');
    this.writes.push(frames);
    return this.onWrite(frames, this);
  }
  end(error?: unknown): void {
    this.calls.push('end');
    this.ends.push(error ?? 'clean');
  }
}

const frame = (i: number): string => `data: {"choices":[{"delta":{"content":"t${i}"}}]}\n\n`;
const numbers = (text: string): number[] =>
  [...text.matchAll(/"content":"t(\d+)"/g)].map((m) => Number(m[1]));

/**
 * How many responses undici has received to their end so far (its `undici:request:trailers` diagnostics
 * channel, published as a response ends): a condition to wait for instead of a fixed time.
 */
function responseEnds(): () => number {
  let count = 0;
  const onEnd = (): void => void count++;
  subscribe('undici:request:trailers', onEnd);
  defer(() => unsubscribe('undici:request:trailers', onEnd));
  return () => count;
}

/** A provider that streams frames 0..9, each in a write of its own. */
const tenFrames = () =>
  scriptedProvider(defer, (res) =>
    writeApart(
      res,
      Array.from({ length: 10 }, (_, i) => frame(i)),
    ),
  );

/** A streamed step of `executeStep` against `url` on the gateway's real context (Pool, spend rule, FakeClock). */
async function streamStep(url: string, includeUsage = false) {
  const clock = new FakeClock();
  const counters = new MemoryCounterStore(clock);
  const gateway = createAiGateway({
    env: { K: 'k' },
    clock,
    store: { counters },
    providers: { p: { baseUrl: url, apiKeyEnv: 'K' } },
    prices: PRICES,
    spendRules: [RULE],
  });
  defer(() => gateway.close());
  const client = new AbortController();
  const request: AiRequest = {
    id: 'r',
    body: ask('p/m', { stream: true, max_tokens: 50 }),
    stream: true,
    includeUsage,
    metadata: {},
    overrides: {},
    signal: client.signal,
    receivedAt: clock.now(),
    route: null,
  };
  const answer = (await executeStep(
    { name: 's', provider: 'p', model: 'm' },
    request,
    gateway.context,
  )) as StreamStepAnswer;
  expect(answer.kind).toBe('stream');
  const key = `ai:spend:daily:v:p:${spendWindowStart(clock.now(), DAY)}`;
  const spend = async () => readSpendState(await counters.get(key));
  /** Nothing left attached: the first-byte timer and the call's listener on the client's signal. */
  const idle = () => [clock.pendingTimers(), getEventListeners(client.signal, 'abort').length];
  return { answer, client, spend, idle };
}

describe('StreamAnswer with a hand-written sink (execute.ts, provider-call.ts over a real socket)', () => {
  it('random full/resume interleavings: every frame once, in order; one clean end; usage settled; nothing left', async () => {
    let text = '';
    let pieces: Buffer[] = [];
    const { url } = await scriptedProvider(defer, (res) => writeApart(res, pieces));
    for (let seed = 1; seed <= 8; seed++) {
      const rand = seeded(seed);
      text = script(rand, '\n');
      pieces = cut(Buffer.from(text), rand, true); // split mid-character too
      const includeUsage = rand() < 0.5;
      const { answer, spend, idle } = await streamStep(url, includeUsage);
      const sink = new Sink(() => {
        if (rand() < 0.2) answer.resume(); // not full: a no-op
        if (rand() < 0.6) return true;
        if (rand() < 0.5) setImmediate(() => answer.resume());
        else queueMicrotask(() => answer.resume());
        return false;
      });
      answer.pipe(sink);
      const outcome = await answer.done;
      const context = `seed ${seed} ${JSON.stringify(text)}`;
      expect(
        sink.frames.map(canonical).filter((f) => f !== ''),
        context,
      ).toEqual(reference(text, !includeUsage));
      expect(
        sink.calls.filter((c) => c !== 'write'),
        context,
      ).toEqual(['end']);
      expect(sink.ends, context).toEqual(['clean']);
      expect(outcome, context).toMatchObject({ outcome: 'ok', costUsd: '0.000014', settledMicroUsd: 14 });
      expect(await spend()).toEqual({ spentMicroUsd: 14, reservedMicroUsd: 0 });
      expect(idle()).toEqual([0, 0]);
    }
  });

  it('cancel twice, then pipe: one end with the cancel, done canceled, the reservation settled, the call closed', async () => {
    const provider = await scriptedProvider(defer, (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frame(0)); // and never more
    });
    const { answer, spend, idle } = await streamStep(provider.url);
    answer.cancel();
    answer.cancel();
    const sink = new Sink();
    answer.pipe(sink);
    expect(() => answer.pipe(new Sink())).toThrow(/piped once/);
    answer.resume();
    expect(sink.calls).toEqual(['end']);
    expect(sink.ends[0]).toMatchObject({ code: 'canceled' });
    // Canceled before it was piped: nothing of it was read, so only its prompt (free here) is settled.
    expect(await answer.done).toMatchObject({ outcome: 'canceled', usage: undefined, settledMicroUsd: 0 });
    expect(await spend()).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 0 });
    expect(idle()).toEqual([0, 0]);
    await until(() => provider.closed() === 1);
  });

  it('the client leaving while the sink is full and chunks are queued: one end at once, no frame after it', async () => {
    let writer: { written: () => number } | undefined;
    const provider = await scriptedProvider(defer, (res) => {
      writer = writeApart(
        res,
        Array.from({ length: 200 }, (_, i) => frame(i)),
        () => undefined, // never ends
      );
    });
    const { answer, client, spend, idle } = await streamStep(provider.url);
    // Chunks queue before the pipe: the provider wrote 10 frames 1 ms apart, the first three long arrived.
    await until(() => (writer?.written() ?? 0) >= 10);
    const sink = new Sink((_frames, s) => s.writes.length < 3);
    answer.pipe(sink); // full at its third write: the rest stays queued
    client.abort();
    answer.resume(); // after the end: a no-op
    expect(await answer.done).toMatchObject({ outcome: 'canceled' });
    expect(sink.calls.slice(-1)).toEqual(['end']);
    expect(sink.calls.filter((c) => c === 'end')).toHaveLength(1);
    expect(numbers(sink.frames.join('')).slice(0, 3)).toEqual([0, 1, 2]);
    expect(sink.writes.length).toBeLessThan(30);
    // Settled from the frames that came (written, or queued and dropped at the abort), not the reservation
    // of 100: at least the first 10 ("t0".."t9", 20 bytes: 5 tokens of 2 micro-USD), at most what was sent.
    const sent = writer!.written();
    const sentBytes = Array.from({ length: sent }, (_, i) => `t${i}`).join('').length;
    const { spentMicroUsd, reservedMicroUsd } = await spend();
    expect(reservedMicroUsd).toBe(0);
    expect(spentMicroUsd).toBeGreaterThanOrEqual(10);
    expect(spentMicroUsd).toBeLessThanOrEqual(2 * Math.ceil(sentBytes / 4));
    expect(idle()).toEqual([0, 0]);
    await until(() => provider.closed() === 1);
  });

  it('chunks queued before the pipe go to a full sink only as it resumes; then every frame, once, and the end', async () => {
    const ends = responseEnds();
    const provider = await tenFrames();
    const { answer, spend } = await streamStep(provider.url);
    await until(() => ends() === 1); // the whole answer, its end included, waits for its reader
    const sink = new Sink(() => false);
    answer.pipe(sink);
    expect(sink.writes.length).toBeLessThan(10); // a full sink is not flooded with the queue
    // Resumed until it ends: each resume lets one more write through.
    await expect
      .poll(() => {
        answer.resume();
        return sink.ends.length;
      })
      .toBe(1);
    expect(numbers(sink.frames.join(''))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(sink.calls.slice(-1)).toEqual(['end']);
    expect(sink.ends).toEqual(['clean']);
    expect(await answer.done).toMatchObject({ outcome: 'ok' });
    // No usage: what it carried, "t0".."t9" (20 bytes, 5 tokens of 2 micro-USD), not the reservation of 100.
    expect(await spend()).toEqual({ spentMicroUsd: 10, reservedMicroUsd: 0 });
  });

  it('a body nobody reads yet: the provider is paused (64 KB queued), then read in full, in order', async () => {
    const count = 8_000;
    const provider = await twoSpeeds(count);
    const registry = new ProviderRegistry({ p: { baseUrl: provider.url } }, {});
    defer(() => registry.close());
    const payload = JSON.stringify({ model: 'fast', stream: true });
    const bytes = await callProvider(
      registry.get('p')!,
      payload,
      1_000,
      new AbortController().signal,
      new FakeClock(),
    );
    await stalled(provider.sent);
    expect(provider.sent()).toBeLessThan(count / 2);
    const { text, error } = await readBody(bytes.body);
    expect(error).toBeUndefined();
    expect(numbers(text)).toEqual(Array.from({ length: count }, (_, i) => i));
  });

  // Found by this suite (fixed): a sink that canceled from inside `write` got its `end` at once (the call's
  // abort ends the reader), but the splitter went on writing the rest of the chunk's frames to it (it wrote a
  // frame at a time then). Nothing goes to a sink after its end.
  it('a sink canceling inside write gets no write after its end', async () => {
    const provider = await scriptedProvider(defer, (res) =>
      writeApart(res, [[0, 1].map(frame).join(''), [2, 3, 4].map(frame).join('')]),
    );
    const { answer } = await streamStep(provider.url);
    const sink = new Sink(() => {
      answer.cancel();
      return true;
    });
    answer.pipe(sink);
    expect(await answer.done).toMatchObject({ outcome: 'canceled' });
    expect(sink.calls).toEqual(['write', 'end']);
    expect(numbers(sink.writes.join(''))).toEqual([0, 1]);
  });

  // Found by this suite (fixed): once the provider's answer had ended with chunks still queued behind a full
  // sink, the call no longer listened to its link: `cancel()` settled `done` as canceled but the sink never got
  // its `end`, and a later `resume()` pushed the queued frames and a clean end after the cancel. (The gateway's
  // ResponseSink closes itself first, so its clients did not see it.) `cancel()` now ends a piped sink itself.
  it('cancel() after the provider ended, chunks queued behind a full sink: one end with the cancel, nothing after', async () => {
    const ends = responseEnds();
    const provider = await tenFrames();
    const { answer } = await streamStep(provider.url);
    await until(() => ends() === 1); // the end reached the gateway: all queued
    const sink = new Sink(() => false);
    answer.pipe(sink);
    const written = sink.writes.length;
    answer.cancel();
    answer.resume();
    expect(await answer.done).toMatchObject({ outcome: 'canceled' });
    expect(sink.writes).toHaveLength(written);
    expect(sink.calls.slice(-1)).toEqual(['end']);
    expect(sink.ends[0]).toMatchObject({ code: 'canceled' });
  });

  // Noted by this suite, fixed since: a sink that drained inside its own `write` (calling `resume()` there)
  // and then answered false paused the provider for a resume that had already come, so the stream stalled.
  it('a sink that resumes inside write and then answers false is not paused: every frame, and the end', async () => {
    const provider = await tenFrames();
    const { answer } = await streamStep(provider.url);
    const sink = new Sink(() => {
      answer.resume();
      return false;
    });
    answer.pipe(sink);
    expect(await answer.done).toMatchObject({ outcome: 'ok' });
    expect(numbers(sink.frames.join(''))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(sink.ends).toEqual(['clean']);
  });
});

const big = (i: number): string =>
  `data: {"choices":[{"delta":{"content":"t${i}","pad":"${'x'.repeat(4000)}"}}]}\n\n`;

/**
 * A provider by model: `fast` streams `count` 4 KB frames as fast as its socket takes them, then `[DONE]`;
 * `slow` sends one frame and holds the rest until `release()`.
 */
async function twoSpeeds(count: number) {
  let sent = 0;
  const held: Array<() => void> = [];
  const provider = await scriptedProvider(defer, (res, body) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if ((JSON.parse(body) as { model: string }).model === 'slow') {
      res.write(frame(0));
      held.push(() => res.end(`${frame(1)}data: [DONE]\n\n`));
      return;
    }
    const more = (): void => {
      while (sent < count) if (!res.write(big(sent++))) return void res.once('drain', more);
      res.end('data: [DONE]\n\n');
    };
    more();
  });
  const release = () => held.splice(0).forEach((f) => f());
  return { ...provider, sent: () => sent, release };
}

const streamRequest = (model: string, extra: Record<string, unknown> = {}) => ({
  path: '/v1/chat/completions',
  method: 'POST' as const,
  idempotent: true, // undici pipelines it behind the other
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(ask(model, { stream: true, ...extra })),
});

describe('the pushed stream through the gateway (real sockets, Fastify, undici)', () => {
  it('pipelined keep-alive: a queued response (no socket yet) pauses its provider, then drains in full, in order', async () => {
    const count = 8_000; // 32 MB: far more than the sockets between hold
    const provider = await twoSpeeds(count);
    const { url, logs } = await startGateway(defer, {}, { providers: { raw: { baseUrl: provider.url } } });
    const client = new Client(url, { pipelining: 2 });
    defer(() => client.destroy());
    const first = await client.request(streamRequest('raw/slow'));
    const second = client.request(streamRequest('raw/fast'));
    second.catch(() => undefined); // a failed test destroys the client under it
    // The second answer waits behind the first, which the provider holds: its provider must stall.
    await stalled(provider.sent);
    expect(provider.sent()).toBeLessThan(count / 2);
    expect(logs).toHaveLength(0);
    provider.release();
    expect(numbers(await first.body.text())).toEqual([0, 1]);
    const text = await (await second).body.text();
    expect(numbers(text)).toEqual(Array.from({ length: count }, (_, i) => i));
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    await until(() => logs.length === 2);
    expect(logs.map((l) => l.outcome)).toEqual(['ok', 'ok']);
  });

  it('a pipelined client leaving while its second answer is queued: both provider calls closed, both canceled', async () => {
    const provider = await twoSpeeds(8_000);
    const { url, logs } = await startGateway(defer, {}, { providers: { raw: { baseUrl: provider.url } } });
    const client = new Client(url, { pipelining: 2 });
    const first = await client.request(streamRequest('raw/slow'));
    const second = client.request(streamRequest('raw/fast')).catch(() => undefined);
    await stalled(provider.sent);
    await client.destroy();
    await first.body.text().catch(() => undefined);
    await second;
    await until(() => provider.closed() === 2);
    await until(() => logs.length === 2);
    expect(logs.map((l) => l.outcome).sort()).toEqual(['canceled', 'canceled']);
  });

  it('a client leaving while the provider is paused frees the connection slot; the next stream is served', async () => {
    const provider = await twoSpeeds(8_000);
    const { url, logs, gateway } = await startGateway(
      defer,
      {},
      { providers: { raw: { baseUrl: provider.url, maxConnections: 1 } } },
    );
    const slots = gateway.context.providers.get('raw')!.slots!;
    const leaving = new Client(url);
    const answer = await leaving.request(streamRequest('raw/fast'));
    await stalled(provider.sent); // the gateway paused the provider: nothing reads
    expect(slots.stats).toEqual({ busy: 1, waiting: 0 });
    await leaving.destroy();
    await answer.body.text().catch(() => undefined);
    await until(() => logs.length === 1 && provider.closed() === 1);
    expect(logs[0]).toMatchObject({ outcome: 'canceled' });
    expect(slots.stats).toEqual({ busy: 0, waiting: 0 });
    const next = new Client(url);
    defer(() => next.destroy());
    const again = await next.request(streamRequest('raw/slow'));
    provider.release();
    expect(numbers(await again.body.text())).toEqual([0, 1]);
    await until(() => logs.length === 2);
    expect(logs[1]).toMatchObject({ outcome: 'ok' });
  });

  it('clients leaving at random around the provider end: one log line each, spend settled once, slots free', async () => {
    const provider = await scriptedProvider(defer, (res) =>
      writeApart(res, [
        ...Array.from({ length: 20 }, (_, i) => frame(i)),
        `${USAGE}\n\n`,
        'data: [DONE]\n\n',
      ]),
    );
    const clock = new FakeClock();
    const counters = new MemoryCounterStore(clock);
    const { url, logs, gateway } = await startGateway(
      defer,
      {},
      {
        clock,
        store: { counters },
        prices: { 'raw/m': PRICES['p/m'] },
        spendRules: [RULE],
        providers: { raw: { baseUrl: provider.url, maxConnections: 4 } },
      },
    );
    const rand = seeded(7);
    const runs = Array.from({ length: 24 }, async () => {
      const leave = new AbortController();
      const client = new Client(url);
      const request = { ...streamRequest('raw/m', { max_tokens: 50 }), signal: leave.signal };
      const answer = await client.request(request);
      // The provider takes 20-60 ms: the client leaves before, around or after its end.
      const timer = setTimeout(() => leave.abort(), rand() * 80);
      await answer.body.text().catch(() => undefined);
      clearTimeout(timer);
      await client.destroy();
    });
    await Promise.all(runs);
    await until(() => logs.length === 24);
    await new Promise((resolve) => setTimeout(resolve, 50)); // no second line for any request
    expect(logs).toHaveLength(24);
    expect(new Set(logs.map((l) => l.request_id)).size).toBe(24);
    expect(logs.every((l) => l.outcome === 'ok' || l.outcome === 'canceled')).toBe(true);
    expect(logs.filter((l) => l.outcome === 'ok').every((l) => l.cost_usd === '0.000014')).toBe(true);
    // A stream whose usage came settles 14; one left before it settles what it carried: at most its 20
    // frames ("t0".."t19", 50 bytes: 13 tokens of 2 micro-USD), never its reservation of 100.
    const known = logs.filter((l) => l.cost_usd !== null).length;
    const key = `ai:spend:daily:v:raw:${spendWindowStart(clock.now(), DAY)}`;
    const { spentMicroUsd, reservedMicroUsd } = readSpendState(await counters.get(key));
    expect(reservedMicroUsd).toBe(0);
    expect(spentMicroUsd).toBeGreaterThanOrEqual(14 * known);
    expect(spentMicroUsd).toBeLessThanOrEqual(14 * known + 26 * (24 - known));
    expect(gateway.context.providers.get('raw')!.slots!.stats).toEqual({ busy: 0, waiting: 0 });
    expect(clock.pendingTimers()).toBe(0);
  });
});

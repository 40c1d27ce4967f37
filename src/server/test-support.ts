/**
 * Shared test helpers for server/ (not a test file itself): a server over a real jobs runtime on an in-memory
 * SQLite store, a gated job type, and a small reader for server-sent events over a real socket.
 */
import type { FastifyInstance } from 'fastify';
import { FakeClock, type Disposable } from '../core/index.js';
import { createJobs, type Jobs } from '../jobs/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type InputSchema, type JobStore } from '../store/index.js';
import { createServer } from './server.js';
import type { ServerOptions } from './options.js';

/** A promise with its resolve exposed. */
export interface Gate {
  promise: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** The schema of the `ask` job's question. */
export const SIZE_SCHEMA = {
  type: 'object',
  properties: { size: { type: 'string', enum: ['S', 'M', 'L'] } },
  required: ['size'],
} as const satisfies InputSchema;

export interface Harness {
  /** Time of the jobs runtime and the store (createdAt, …). */
  jobsClock: FakeClock;
  /** Time of the server (keep-alives, readiness timeout, shutdown grace). */
  clock: FakeClock;
  store: JobStore;
  jobs: Jobs;
  app: FastifyInstance;
  /** The `steps` job waits on these, in order. */
  gates: [Gate, Gate];
  /** Subscriptions the server holds open now (counted around the real `jobs.subscribe`). */
  liveSubscriptions(): number;
  close(): Promise<void>;
}

/**
 * Job types: `steps` (events 1 started, 2 progress 1/3, [gate 0], 3 partial, 4 progress 2/3, [gate 1],
 * 5 progress 3/3, 6 completed `{ ok: true }`), `quick` (started, completed `'done'`), `ask` (started, input
 * required `'Which size?'` with {@link SIZE_SCHEMA}; answered: started, completed `{ size: <answer> }`) and
 * `idle` (never started: the worker does not run it).
 */
export async function harness(overrides: Partial<ServerOptions> = {}): Promise<Harness> {
  const jobsClock = new FakeClock();
  const clock = new FakeClock();
  const store = await openSqliteStore({ path: ':memory:', clock: jobsClock });
  const real = createJobs({ store, clock: jobsClock, owner: 'w1' });
  const gates: [Gate, Gate] = [gate(), gate()];
  real.defineJob('steps', async (ctx) => {
    await ctx.progress(1, 3, 'one');
    await gates[0].promise;
    await ctx.partial({ draft: 'a' });
    await ctx.progress(2, 3);
    await gates[1].promise;
    await ctx.progress(3, 3);
    return { ok: true };
  });
  real.defineJob('quick', () => 'done');
  real.defineJob('ask', async (ctx) => ({
    size: await ctx.requestInput({ message: 'Which size?', schema: SIZE_SCHEMA }),
  }));
  real.start();
  // A second runtime on the same store knows the `idle` type but never runs it: its jobs stay pending.
  const idle = createJobs({ store, clock: jobsClock, owner: 'w2' });
  idle.defineJob('idle', () => undefined);

  let live = 0;
  const jobs: Jobs = {
    ...real,
    enqueue: (type, payload, options) =>
      type === 'idle' ? idle.enqueue(type, payload, options) : real.enqueue(type, payload, options),
    subscribe(jobId, fromSeq, listener, options) {
      live++;
      let active = true;
      const release = (): void => {
        if (active) live--;
        active = false;
      };
      const inner: Disposable = real.subscribe(jobId, fromSeq, listener, {
        onEnd: (error) => {
          release();
          options?.onEnd?.(error);
        },
      });
      return {
        dispose() {
          release();
          inner.dispose();
        },
      };
    },
  };
  const app = createServer({ jobs, store, clock, ...overrides });
  return {
    jobsClock,
    clock,
    store,
    jobs,
    app,
    gates,
    liveSubscriptions: () => live,
    async close() {
      gates[0].open();
      gates[1].open();
      await app.close();
      await real.stop({ graceMs: 0 });
      await store.close();
    },
  };
}

/** Waits until `store` holds `count` events of `jobId`, letting the job's promise chains run. */
export async function untilEvents(store: JobStore, jobId: string, count: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if ((await store.events(jobId)).length >= count) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  throw new Error(`job ${jobId} never reached ${count} events`);
}

/** One SSE frame: its fields, and its comment lines (without the leading colon and space). */
export interface Frame {
  id?: string;
  event?: string;
  data?: string;
  retry?: string;
  comments: string[];
}

/** Reads frames from a `text/event-stream` response body. */
export class SseReader {
  private buffer = '';
  private readonly reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  private readonly decoder = new TextDecoder();
  ended = false;

  constructor(response: Response) {
    // A 204 has no body at all.
    this.reader = response.body?.getReader();
  }

  /** The next frame, or `undefined` once the stream has ended. */
  async next(): Promise<Frame | undefined> {
    for (;;) {
      const cut = this.buffer.indexOf('\n\n');
      if (cut >= 0) {
        const raw = this.buffer.slice(0, cut);
        this.buffer = this.buffer.slice(cut + 2);
        return parseFrame(raw);
      }
      const { value, done } =
        this.reader === undefined ? { value: undefined, done: true } : await this.reader.read();
      if (done) {
        this.ended = true;
        return undefined;
      }
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }

  /** Frames with an `id` until `count` of them were read (comments skipped and returned apart). */
  async events(count: number): Promise<Frame[]> {
    const frames: Frame[] = [];
    while (frames.length < count) {
      const frame = await this.next();
      if (frame === undefined) throw new Error(`stream ended after ${frames.length} of ${count} events`);
      if (frame.id !== undefined) frames.push(frame);
    }
    return frames;
  }

  /** Every remaining frame until the stream ends. */
  async rest(): Promise<Frame[]> {
    const frames: Frame[] = [];
    for (let f = await this.next(); f !== undefined; f = await this.next()) frames.push(f);
    return frames;
  }

  async cancel(): Promise<void> {
    await this.reader?.cancel().catch(() => undefined);
  }
}

function parseFrame(raw: string): Frame {
  const frame: Frame = { comments: [] };
  for (const line of raw.split('\n')) {
    if (line.startsWith(':')) {
      frame.comments.push(line.slice(1).trimStart());
      continue;
    }
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (name === 'id' || name === 'event' || name === 'data' || name === 'retry') frame[name] = value;
  }
  return frame;
}

/** Starts `app` on 127.0.0.1, port 0, and returns its base URL. */
export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return `http://127.0.0.1:${address.port}`;
}

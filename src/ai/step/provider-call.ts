/**
 * One provider call through undici's `dispatch` handler API (undici docs, `Dispatcher.dispatch`) rather than
 * `request`. `request` wraps every answer in a Readable stream (its buffer, state machine and end-of-stream
 * ticks), an AsyncResource, and for a stream an async iterator over it; this handler takes the chunks itself:
 * - a non-streamed answer is collected and handed over whole (`maxBytes` enforced);
 * - a streamed one is handed over at its first chunk, and the handler is then its `body`: once a reader
 *   is attached each chunk is pushed to it from `onResponseData`, synchronously (no promise or iterator step
 *   per chunk). The connection is paused while the reader is full (backpressure from a slow client reaches
 *   the provider), and before a reader is attached while more than {@link HIGH_WATER_BYTES} wait for it.
 * Measured per request, against `request` (gateway, simulated provider and client counted together): 4.5 KB
 * less allocated for a non-streamed answer, 170 KB less for a 200-token stream sent one chunk per token.
 */
import type { Dispatcher } from 'undici';
import { BreakwaterError, type Clock } from '../../core/index.js';
import type { Provider } from '../providers.js';
import type { BodySource, ChunkReader, FirstBytes } from './attempt.js';
import type { CallAbort } from './call-abort.js';
import type { SlotWaiter } from '../connection-slots.js';
import {
  ENDED_WHOLE,
  newStream,
  type Ended,
  type Failed,
  type Phase,
  type Slot,
  type Stream,
  type Streaming,
  type Waiting,
} from './call-phase.js';
import {
  ERROR_BODY_LIMIT,
  ProviderHttpError,
  errorObject,
  firstByteTimeout,
  responseTooLarge,
} from './provider-error.js';

/** Bytes of a stream waiting for its reader to be attached, above which the provider's connection is paused. */
const HIGH_WATER_BYTES = 64 * 1024;

/** The `body` of an answer read in full, or empty. */
const ENDED: BodySource = {
  read: (reader) => reader.onEnd(),
  resume: () => undefined,
};

type Headers = Record<string, string | string[] | undefined>;

/**
 * Sends `payload` to `path` (default the provider's chat completions) and resolves as `callProvider` documents: with `maxBytes`, once the whole answer is read;
 * without, at the first body byte. The first-byte timer is cleared by the first body byte of a 2xx answer
 * (or its end when empty); an error answer's body is read up to 64 KB for the provider's message.
 * @throws as `callProvider` does: BreakwaterError `timeout` (first byte), `upstream_error`
 *   (`response_too_large`), ProviderHttpError, undici's network error, the signal's reason.
 */
export function dispatchCall(
  provider: Provider,
  payload: string,
  timeoutMs: number,
  link: CallAbort,
  clock: Clock,
  maxBytes: number | undefined,
  path: string = provider.completionsPath,
): Promise<FirstBytes> {
  return new Promise<FirstBytes>((resolve, reject) => {
    const call = new ProviderCall(provider, path, payload, timeoutMs, link, clock, maxBytes, resolve, reject);
    if (link.aborted) {
      call.fail(link.reason);
      return;
    }
    link.once('abort', call.onAbort);
    call.begin();
  });
}

/** The handler of one call, and for a stream its body's source (one reader). */
class ProviderCall implements Dispatcher.DispatchHandler, BodySource, SlotWaiter {
  private controller: Dispatcher.DispatchController | undefined = undefined;
  private readonly started: number;
  private phase: Phase;
  private status = 0;
  private headers: Headers = {};
  /** A whole answer's body, an error answer's first bytes, or a stream's chunks waiting for the reader. */
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private firstAt = 0;
  private slot: Slot = 'none';

  constructor(
    private readonly provider: Provider,
    /** The path under the provider's origin (`/v1/chat/completions`). */
    private readonly path: string,
    private readonly payload: string,
    private readonly timeoutMs: number,
    private readonly link: CallAbort,
    private readonly clock: Clock,
    /** Defined: a non-streamed answer, read whole. */
    private readonly maxBytes: number | undefined,
    private readonly resolve: (bytes: FirstBytes) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.started = clock.now();
    this.phase = { kind: 'waiting', timer: clock.setTimeout(this.onTimeout, timeoutMs), timedOut: false };
  }

  /** Still to be sent or answered (a waiter for a connection slot that was aborted is skipped). */
  get live(): boolean {
    return this.phase.kind === 'waiting' || this.phase.kind === 'streaming';
  }

  /** The stream handed over as the body: only its reader calls what reads it (BodySource). */
  private get stream(): Stream {
    return (this.phase as Streaming | Ended | Failed).stream!;
  }

  /**
   * Sends the request now, or, when the provider has a connection cap and every slot is taken, once
   * {@link start} is called with a slot (connection-slots.ts).
   */
  begin(): void {
    const slots = this.provider.slots;
    if (slots === undefined || slots.acquire(this)) this.start();
    else this.slot = 'waiting';
  }

  /** Sends the request (its slot, if the provider has a cap, taken). */
  start(): void {
    this.slot = this.provider.slots !== undefined ? 'held' : 'none';
    try {
      this.provider.dispatcher.dispatch(
        {
          origin: this.provider.origin,
          path: this.path,
          method: 'POST',
          headers: this.provider.headers,
          body: this.payload,
        },
        this,
      );
    } catch (error) {
      // undici reports bad options to the handler; anything else lands here, and no callback follows.
      this.freeSlot();
      this.fail(error);
    }
  }

  /** undici is done with this call (its last callback): its connection slot, if any, goes to the next. */
  private freeSlot(): void {
    if (this.slot !== 'held') return;
    this.slot = 'none';
    this.provider.slots!.release();
  }

  /** The first-byte timer fired: the call is aborted with the timeout as its reason. */
  private readonly onTimeout = (): void => {
    if (this.phase.kind === 'waiting') this.phase.timedOut = true;
    this.link.abort(firstByteTimeout(this.provider.name, this.timeoutMs));
  };

  /** The link aborted (the client left, the timer, the server's request timeout, a reader giving up). */
  readonly onAbort = (): void => {
    const reason = this.link.reason;
    // A stream's reader gets the end at once: whoever aborted does not want the chunks still queued.
    this.fail(reason, true);
    // Waiting for a slot: skipped when its turn comes. Queued in the pool (no slot cap, or in the instant
    // between a slot's release and undici's connection coming free): undici aborts it at onRequestStart,
    // as `request` does, and destroys that connection.
    this.controller?.abort(reason as Error);
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.phase.kind === 'failed') controller.abort(this.link.reason as Error);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, status: number, headers: Headers): void {
    this.status = status; // a 1xx is followed by the final status; the last one counts
    this.headers = headers;
  }

  /**
   * A body with neither `content-length` nor chunked encoding ends when the connection closes (RFC 9112,
   * section 6.3), and undici reports a reset of that connection as a normal end (rare: HTTP/1.0-style servers).
   */
  private closeDelimited(): boolean {
    const h = this.headers;
    return h['content-length'] === undefined && !/chunked/i.test(String(h['transfer-encoding'] ?? ''));
  }

  /** A non-streamed {@link closeDelimited} body is whole only when it is a whole JSON text. */
  private truncated(body: Buffer): boolean {
    if (!this.closeDelimited()) return false;
    try {
      JSON.parse(body.toString('utf8'));
      return false;
    } catch {
      return true;
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const phase = this.phase;
    if (phase.kind === 'ended' || phase.kind === 'failed') return;
    const status = this.status;
    if (status < 200 || status >= 300) {
      const room = ERROR_BODY_LIMIT - this.size;
      this.size += chunk.length;
      if (this.size > ERROR_BODY_LIMIT) {
        // Its first 64 KB are enough to find the provider's message; the rest is not read.
        this.chunks.push(chunk.subarray(0, room));
        const error = this.httpError();
        this.fail(error);
        controller.abort(error);
      } else this.chunks.push(chunk);
      return;
    }
    if (this.maxBytes !== undefined) {
      if (this.chunks.length === 0) this.firstByte();
      this.size += chunk.length;
      if (this.size > this.maxBytes) {
        const error = responseTooLarge(this.provider, this.maxBytes);
        this.fail(error);
        controller.abort(error);
      } else this.chunks.push(chunk);
      return;
    }
    if (phase.kind === 'waiting') {
      this.firstByte();
      this.phase = { kind: 'streaming', stream: newStream(chunk.length) };
      this.chunks.push(chunk);
      const firstByteMs = this.firstAt - this.started;
      const closeDelimited = this.closeDelimited();
      this.resolve({ status, body: this, link: this.link, firstByteMs, raw: undefined, closeDelimited });
      return;
    }
    const stream = phase.stream;
    const reader = stream.reader;
    if (reader !== undefined && !stream.readerFull && this.chunks.length === 0) {
      // The common case: straight to the reader.
      if (!reader.onChunk(chunk)) this.full(stream, controller);
      return;
    }
    this.chunks.push(chunk);
    stream.queued += chunk.length;
    if (stream.queued > HIGH_WATER_BYTES && !stream.paused) {
      stream.paused = true;
      controller.pause();
    }
  }

  /** Attaches the stream's reader and pushes it what came meanwhile (see BodySource). */
  read(reader: ChunkReader): void {
    this.stream.reader = reader;
    this.flush();
  }

  resume(): void {
    const stream = this.stream;
    if (stream.reader === undefined || stream.readerDone || !stream.readerFull) return;
    stream.readerFull = false;
    this.flush();
  }

  /** The reader is full: the connection pauses until it resumes (unless `onChunk` ended the reader). */
  private full(stream: Stream, controller: Dispatcher.DispatchController | undefined): void {
    if (stream.readerDone) return;
    stream.readerFull = true;
    if (stream.paused) return;
    stream.paused = true;
    controller?.pause();
  }

  /**
   * Pushes the queued chunks while the reader takes them; once none is left, the end when the stream is over,
   * else the connection resumes. Safe against a reader that ends the call from inside `onChunk`.
   */
  private flush(): void {
    const stream = this.stream;
    const reader = stream.reader!;
    const chunks = this.chunks;
    while (chunks.length > 0 && !stream.readerFull && !stream.readerDone) {
      const chunk = chunks.shift()!;
      stream.queued -= chunk.length;
      if (!reader.onChunk(chunk)) this.full(stream, this.controller);
    }
    if (stream.readerDone || chunks.length > 0) return;
    if (this.phase.kind !== 'streaming') {
      this.endReader();
      return;
    }
    if (stream.paused && !stream.readerFull) {
      stream.paused = false;
      this.controller?.resume();
    }
  }

  /**
   * The reader's one `onEnd`: clean after the provider's end, else with the failure. Chunks still queued
   * (an abort does not wait for them) go to the reader's `onDropped` first.
   */
  private endReader(): void {
    const stream = this.stream;
    if (stream.readerDone) return;
    stream.readerDone = true;
    const reader = stream.reader!;
    if (reader.onDropped !== undefined) for (const chunk of this.chunks) reader.onDropped(chunk);
    this.chunks.length = 0;
    stream.queued = 0;
    const phase = this.phase;
    reader.onEnd(phase.kind === 'failed' ? phase.error : undefined);
  }

  onResponseEnd(): void {
    this.freeSlot();
    const phase = this.phase;
    if (phase.kind === 'ended' || phase.kind === 'failed') return;
    const status = this.status;
    if (status < 200 || status >= 300) {
      this.fail(this.httpError());
      return;
    }
    if (phase.kind === 'streaming') {
      this.phase = { kind: 'ended', stream: phase.stream };
      this.release(phase);
      if (phase.stream.reader !== undefined) this.flush();
      return;
    }
    // Whole, or a stream whose body was empty.
    if (this.chunks.length === 0) this.firstByte();
    this.phase = ENDED_WHOLE;
    this.release(phase);
    this.link.dispose();
    const firstByteMs = this.firstAt - this.started;
    if (this.maxBytes === undefined) {
      const closeDelimited = this.closeDelimited();
      this.resolve({ status, body: ENDED, link: this.link, firstByteMs, raw: undefined, closeDelimited });
      return;
    }
    const chunks = this.chunks;
    const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.size);
    if (this.truncated(raw)) {
      this.reject(
        new BreakwaterError('upstream_unavailable', {
          message: `The provider ${this.provider.name} closed the connection before its answer was complete.`,
          source: this.provider.name,
          details: { provider: this.provider.name, reason: 'truncated' },
        }),
      );
      return;
    }
    this.resolve({ status, body: ENDED, link: this.link, firstByteMs, raw, closeDelimited: false });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.freeSlot();
    this.fail(error);
  }

  /**
   * The call failed. Before the answer was handed over, its promise rejects (when the timer fired, whatever
   * undici reports: see {@link timeoutError}); while streaming, the reader gets the error after the chunks
   * already queued, or at once with `dropQueued` (an abort). Once over, nothing happens.
   */
  fail(error: unknown, dropQueued = false): void {
    const phase = this.phase;
    if (phase.kind === 'ended' || phase.kind === 'failed') return;
    const stream = phase.kind === 'streaming' ? phase.stream : undefined;
    this.phase = { kind: 'failed', error, stream };
    this.release(phase);
    if (this.slot === 'waiting') {
      this.slot = 'none';
      this.provider.slots!.abandoned();
    }
    if (phase.kind === 'waiting') {
      this.link.dispose();
      this.reject(phase.timedOut ? this.timeoutError() : error);
      return;
    }
    if (phase.stream.reader === undefined) return;
    if (dropQueued) this.endReader();
    else this.flush();
  }

  /**
   * What a call cut by its first-byte timer failed with: the provider's own answer when its head was an error
   * (a 429 or 503 whose body stalled keeps its status and `Retry-After`, so it is retried as the provider
   * asked), else the first-byte timeout.
   */
  private timeoutError(): unknown {
    return this.status >= 300 ? this.httpError() : firstByteTimeout(this.provider.name, this.timeoutMs);
  }

  /** Called only while waiting: the first byte stops the first-byte timer. */
  private firstByte(): void {
    this.clock.clearTimeout((this.phase as Waiting).timer);
    this.firstAt = this.clock.now();
  }

  private httpError(): ProviderHttpError {
    const text = Buffer.concat(this.chunks).toString('utf8');
    return new ProviderHttpError(this.status, this.headers, errorObject(text));
  }

  /** The timer and the abort listener go. A stream's link stays attached to the client until its reader is done. */
  private release(phase: Waiting | Streaming): void {
    if (phase.kind === 'waiting') this.clock.clearTimeout(phase.timer);
    this.link.removeListener('abort', this.onAbort);
  }
}

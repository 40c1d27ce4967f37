import type { ServerResponse } from 'node:http';
import { BreakwaterError, type Clock, type TimerHandle } from '../core/index.js';
import type { JobEvent } from '../store/index.js';
import type { Closable } from './lifecycle.js';
import { toEventView } from './views.js';

/** Options of an {@link SseStream}. */
export interface SseStreamOptions {
  clock: Clock;
  /** Ms of silence before a `: keep-alive` comment. */
  keepAliveMs: number;
  /** Most bytes queued for the client before the stream is dropped. */
  maxBufferBytes: number;
}

/**
 * One `text/event-stream` response (WHATWG HTML, "Server-sent events"). Each job event is one frame:
 * `id: <seq>`, `event: <type>`, `data: <JSON of the event view>` (JSON never contains a raw newline, so one
 * `data:` line is enough). After `keepAliveMs` without a write a `: keep-alive` comment line goes out, so
 * proxies that cut idle connections (often after 30-60 s) leave the stream alone.
 *
 * Headers go out on {@link SseStream.open}, not before: a stream that ends before it opened can still answer
 * with another status. `onClose` runs once, however the response ends (end, client gone, dropped).
 */
export class SseStream implements Closable {
  private timer: TimerHandle | undefined;
  private opened = false;
  private ended = false;
  private readonly done: Promise<void>;

  constructor(
    private readonly res: ServerResponse,
    private readonly options: SseStreamOptions,
    onClose: () => void,
  ) {
    this.done = new Promise<void>((resolve) => {
      res.once('close', () => {
        this.ended = true;
        this.stopTimer();
        onClose();
        resolve();
      });
    });
  }

  /** True once the headers were sent. */
  get isOpen(): boolean {
    return this.opened;
  }

  /** Sends the 200 and the stream headers (once). */
  open(): void {
    if (this.opened || this.ended) return;
    this.opened = true;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      // no-transform: a compressing proxy would buffer the stream; X-Accel-Buffering: nginx would too.
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    });
    this.res.flushHeaders();
    this.armKeepAlive();
  }

  /** Writes one job event as an SSE frame; an error in it tells what is left of its wait now (`toEventView`). */
  send(event: JobEvent): void {
    const data = JSON.stringify(toEventView(event, this.options.clock.now()));
    this.write(`id: ${event.seq}\nevent: ${event.type}\ndata: ${data}\n\n`);
  }

  /** Writes a comment line (ignored by `EventSource`, seen by raw readers). */
  comment(text: string): void {
    this.write(`: ${text.replace(/[\r\n]+/g, ' ')}\n\n`);
  }

  /** Ends the response (after the terminal event). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stopTimer();
    this.res.end();
  }

  /**
   * Answers with `status` and no stream, for a stream that never opened: 204 (nothing left to send) or a
   * problem. The body must be problem+json when given.
   */
  answer(status: number, problem?: unknown): void {
    if (this.opened || this.ended) return;
    this.ended = true;
    this.stopTimer();
    if (problem === undefined) {
      this.res.writeHead(status).end();
      return;
    }
    const body = JSON.stringify(problem);
    this.res
      .writeHead(status, {
        'content-type': 'application/problem+json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
      })
      .end(body);
  }

  /** {@link Closable.shutdown}: a last comment, then the end; resolves when the response is closed. */
  shutdown(): Promise<void> {
    if (!this.ended) {
      if (this.opened) {
        this.comment('shutting down; reconnect with Last-Event-ID');
        this.end();
      } else {
        this.answer(503);
      }
    }
    return this.done;
  }

  private write(chunk: string): void {
    if (this.ended || !this.opened) return;
    this.res.write(chunk);
    // A client that stopped reading would make the server queue events without bound; drop it, and let it
    // resume from its Last-Event-ID once it reads again.
    if (this.res.writableLength > this.options.maxBufferBytes) {
      this.ended = true;
      this.stopTimer();
      this.res.destroy();
      return;
    }
    this.armKeepAlive();
  }

  private armKeepAlive(): void {
    this.stopTimer();
    this.timer = this.options.clock.setTimeout(() => {
      this.timer = undefined;
      this.comment('keep-alive');
    }, this.options.keepAliveMs);
  }

  private stopTimer(): void {
    if (this.timer === undefined) return;
    this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/**
 * The seq to resume after, from the `Last-Event-ID` header (which wins: an `EventSource` sends it on every
 * reconnect to the same URL) or the `last_event_id` query parameter (for the first connection, where a
 * browser cannot set headers). Absent or empty → 0 (replay everything).
 * @throws BreakwaterError `invalid_payload` (400, `details.field`) unless it is a whole number of decimal
 *   digits within `Number.MAX_SAFE_INTEGER`.
 */
export function parseLastEventId(header: string | string[] | undefined, query: string | undefined): number {
  const fromHeader = Array.isArray(header) ? header[0] : header;
  const useHeader = fromHeader !== undefined && fromHeader !== '';
  const raw = useHeader ? fromHeader : query;
  if (raw === undefined || raw === '') return 0;
  const seq = /^\d{1,16}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(seq)) {
    const field = useHeader ? 'Last-Event-ID' : 'last_event_id';
    throw new BreakwaterError('invalid_payload', {
      message: `${field} must be the seq of a job event (a whole number), got '${raw.slice(0, 40)}'.`,
      details: { field },
    });
  }
  return seq;
}

/** Bounds of {@link StreamSlots}. */
export interface StreamSlotLimits {
  /** Most streams open at once on this server. */
  maxStreams: number;
  /** Most streams open at once for one principal. */
  maxStreamsPerPrincipal: number;
}

/** How long a refused client is told to wait before it opens a stream again (ms). */
export const STREAM_RETRY_AFTER_MS = 5_000;

/**
 * Counts the open SSE streams, in all and per principal (one principal that exhausts its share leaves others
 * unaffected: docs/security.md#limits-and-their-defaults). {@link StreamSlots.take} reserves a slot
 * synchronously, before the stream's reply is hijacked; the release it returns gives it back once, when the
 * response closes.
 */
export class StreamSlots {
  private total = 0;
  private readonly byPrincipal = new Map<string, number>();

  constructor(private readonly limits: StreamSlotLimits) {}

  /** Open streams now. */
  get size(): number {
    return this.total;
  }

  /**
   * Reserves one stream for `principalId`.
   * @returns the release (idempotent).
   * @throws BreakwaterError `rate_limited` (429, `retryAfterMs` 5 000) when the principal holds
   *   `maxStreamsPerPrincipal` already; `overloaded` (503, same hint) when the server holds `maxStreams`.
   */
  take(principalId: string): () => void {
    const held = this.byPrincipal.get(principalId) ?? 0;
    const { maxStreams, maxStreamsPerPrincipal } = this.limits;
    const seconds = STREAM_RETRY_AFTER_MS / 1_000;
    if (held >= maxStreamsPerPrincipal) {
      throw new BreakwaterError('rate_limited', {
        message: `Too many open event streams for this caller (${held} of ${maxStreamsPerPrincipal}); close one, or try again in about ${seconds} seconds.`,
        retryAfterMs: STREAM_RETRY_AFTER_MS,
      });
    }
    if (this.total >= maxStreams) {
      throw new BreakwaterError('overloaded', {
        message: `The server has too many open event streams (${maxStreams}); try again in about ${seconds} seconds.`,
        retryAfterMs: STREAM_RETRY_AFTER_MS,
      });
    }
    this.total++;
    this.byPrincipal.set(principalId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.byPrincipal.get(principalId) ?? 1) - 1;
      if (left === 0) this.byPrincipal.delete(principalId);
      else this.byPrincipal.set(principalId, left);
    };
  }
}

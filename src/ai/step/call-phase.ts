/**
 * The phases of one provider call (`provider-call.ts`) as a tagged union: each phase holds only its own
 * fields (the first-byte timer only while waiting, the reader's state only for a stream, the failure only
 * once failed), so that no flag can contradict the phase.
 */
import type { ChunkReader } from './attempt.js';

/**
 * A call's phase, each holding only its own fields: waiting for the first byte (or, whole, for the end);
 * streaming (handed over at its first chunk); then over, `ended` by the provider or `failed` (nothing more
 * happens). A stream's reader state outlives its streaming phase: the reader still gets the queued chunks and
 * its end once the call is over.
 */
export type Phase = Waiting | Streaming | Ended | Failed;

export interface Waiting {
  readonly kind: 'waiting';
  /** The first-byte timer (cleared by the first byte of a whole answer, whose end is still awaited). */
  readonly timer: unknown;
  /** The timer fired: the call fails with its `timeoutError()` (`provider-call.ts`), whatever undici reports. */
  timedOut: boolean;
}

export interface Streaming {
  readonly kind: 'streaming';
  readonly stream: Stream;
}

/** The provider's end: a whole answer was handed over, or a stream's reader gets a clean end. */
export interface Ended {
  readonly kind: 'ended';
  /** Undefined for an answer that was not streamed. */
  readonly stream: Stream | undefined;
}

/** The call failed (or was aborted): a stream's reader gets `error` after the chunks still queued. */
export interface Failed {
  readonly kind: 'failed';
  readonly error: unknown;
  readonly stream: Stream | undefined;
}

/** A streamed answer: its reader, what waits for it in `chunks`, and the connection's pause. */
export interface Stream {
  reader: ChunkReader | undefined;
  /** The reader's last `onChunk` answered false, and it has not resumed. */
  readerFull: boolean;
  /** The reader got its `onEnd`: nothing more goes to it. */
  readerDone: boolean;
  /** Bytes in the call's `chunks` waiting for the reader. */
  queued: number;
  paused: boolean;
}

/**
 * The provider's connection slot (connection-slots.ts): none (no cap, or not sent yet), waited for, or held
 * from the dispatch to undici's last callback.
 */
export type Slot = 'none' | 'waiting' | 'held';

/** A stream at its first chunk, of `queued` bytes, before its reader is attached. */
export function newStream(queued: number): Stream {
  return { reader: undefined, readerFull: false, readerDone: false, queued, paused: false };
}

/** The end of an answer that was not streamed. */
export const ENDED_WHOLE: Ended = Object.freeze({ kind: 'ended', stream: undefined });

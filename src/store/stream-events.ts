import { NON_NEGATIVE, finite } from '../core/index.js';

/**
 * The stream event store contract: the messages sent on resumable streams (MCP Streamable HTTP, spec
 * 2025-11-25 "Resumability and Redelivery"), kept so a client that lost its connection reconnects with
 * `Last-Event-ID` and receives what it missed. Implemented by the SQLite and PostgreSQL stores next to
 * the `JobStore`; `mcp/` adapts it to the SDK's `EventStore`.
 *
 * Times are ms since the epoch from the store's injected `Clock`, as for jobs.
 */

/** How long stream events are kept by default: 1 hour (ms). Long enough to ride out a dropped connection. */
export const STREAM_EVENT_RETENTION_MS = 60 * 60 * 1000;

/** Default and largest page of {@link StreamEventStore.streamEventsAfter}. */
export const STREAM_EVENTS_PAGE_MAX = 1000;

/** One stored message of a stream. */
export interface StreamEvent {
  /** The id the store gave it at append (see {@link StreamEventStore.appendStreamEvent}). */
  eventId: string;
  /** The JSON value appended; `undefined` was stored as `null`. */
  message: unknown;
}

/** What {@link StreamEventStore.streamEventsAfter} found: the event's stream and the events after it. */
export interface StreamEventsPage {
  streamId: string;
  /** In append order; at most the `limit` asked for. */
  events: StreamEvent[];
}

/**
 * Storage of per-stream messages for resumable streams. Each method is one atomic step on the backend; after
 * the store's `close()` every method rejects with an Error.
 */
export interface StreamEventStore {
  /**
   * Appends `message` (a JSON value) to the stream `streamId` (a non-empty string without NUL; the stream
   * is created on first use) and returns its event id, once the append is durable.
   *
   * Event ids have the form `<stream number>-<seq>` (e.g. `42-7`): the stream number is the store's own
   * surrogate for the stream (never the stream id) and `seq` counts from 1 within the stream, so ids are
   * ordered within a stream by their seq and encode nothing secret. They are not unguessable: whoever may
   * not see another stream must be stopped by the caller (the MCP adapter scopes streams per session). An
   * id is never reused, not even after its stream was pruned and appended to again. Concurrent appends to
   * one stream get seqs in commit order, so a reader never sees seq n+1 before seq n.
   * @throws TypeError (as a rejection, nothing written) for a bad `streamId` or a message JSON.stringify
   *   refuses (a BigInt, a cycle).
   */
  appendStreamEvent(streamId: string, message: unknown): Promise<string>;

  /**
   * The stream of the event `eventId` and its events after it, in order, at most `limit` (an integer,
   * default and maximum {@link STREAM_EVENTS_PAGE_MAX}; `0` answers only which stream it is). `undefined`
   * when the event is unknown: never stored, pruned, or not an id of this store's form.
   */
  streamEventsAfter(eventId: string, limit?: number): Promise<StreamEventsPage | undefined>;

  /**
   * Deletes the events appended more than `olderThanMs` ago (default {@link STREAM_EVENT_RETENTION_MS}),
   * and the streams left without events. Replay after a pruned event answers `undefined`. Run it
   * periodically (e.g. every few minutes); nothing else deletes stream events.
   * @returns how many events were deleted.
   * @throws RangeError (as a rejection) when `olderThanMs` is not a finite number >= 0.
   */
  pruneStreamEvents(olderThanMs?: number): Promise<number>;
}

/** A parsed event id: the stream's number and the seq within it. */
export interface StreamEventRef {
  streamKey: number;
  seq: number;
}

/** Longest digit run accepted in an event id: keeps the parsed numbers exact (< 2^53). */
const EVENT_ID = /^([1-9][0-9]{0,14})-([1-9][0-9]{0,14})$/;

/** Formats an event id (shared by both backends, so ids are interchangeable between them). */
export function formatStreamEventId(ref: StreamEventRef): string {
  return `${ref.streamKey}-${ref.seq}`;
}

/**
 * Parses an event id; `undefined` for anything not of the form `<n>-<n>` with positive whole numbers
 * without leading zeros (an id from a header is client input: one spelling per event, so `7-01` never
 * aliases `7-1`).
 */
export function parseStreamEventId(eventId: string): StreamEventRef | undefined {
  const match = typeof eventId === 'string' ? EVENT_ID.exec(eventId) : null;
  return match === null ? undefined : { streamKey: Number(match[1]), seq: Number(match[2]) };
}

/** The page size to read: `limit` floored into `[0, STREAM_EVENTS_PAGE_MAX]`; the maximum if unset or NaN. */
export function streamEventsLimit(limit: number | undefined): number {
  if (limit === undefined || Number.isNaN(limit)) return STREAM_EVENTS_PAGE_MAX;
  return Math.min(Math.max(Math.floor(limit), 0), STREAM_EVENTS_PAGE_MAX);
}

/**
 * The prune cutoff: events appended before it are deleted.
 * @throws RangeError when `olderThanMs` is not a finite number >= 0.
 */
export function pruneCutoff(nowMs: number, olderThanMs: number = STREAM_EVENT_RETENTION_MS): number {
  return nowMs - finite('pruneStreamEvents', 'olderThanMs', olderThanMs, NON_NEGATIVE);
}

/**
 * Checks a stream id before it is stored. NUL is refused because PostgreSQL text cannot hold it, so both
 * backends accept the same ids.
 * @throws TypeError when `streamId` is not a non-empty string without NUL characters.
 */
export function checkStreamId(streamId: string): string {
  if (typeof streamId !== 'string' || streamId.length === 0 || streamId.includes('\0')) {
    throw new TypeError(
      `appendStreamEvent: streamId must be a non-empty string without NUL, got ${JSON.stringify(streamId)}`,
    );
  }
  return streamId;
}

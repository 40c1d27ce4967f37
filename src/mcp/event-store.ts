import { randomUUID } from 'node:crypto';
import type { McpEventStore } from './sdk.js';
import { BreakwaterError, defineOptions, o } from '../core/index.js';
import { STREAM_EVENTS_PAGE_MAX, type StreamEventStore } from '../store/index.js';

// The SDK's names, through sdk.ts (the one file that imports the SDK).
type EventStore = McpEventStore;
type EventId = string;
type StreamId = string;
type JSONRPCMessage = Parameters<McpEventStore['storeEvent']>[1];

/** Options of {@link createDurableEventStore}; validated when it is created. */
export interface DurableEventStoreOptions {
  /**
   * The namespace of the streams this event store sees: pass the MCP session id of the transport it serves.
   * Default: a random UUID per call, so one event store per transport is isolated but cannot find its
   * events again after a restart.
   *
   * Why it matters: the SDK names every session's standalone GET stream `_GET_stream`, and event ids are
   * not secret, so one unscoped store shared by several sessions would replay one session's messages to
   * another. An event id from another scope is answered as unknown.
   */
  scope?: string;
  /** Events read per query while replaying (integer in [1, 1000], default 1000). */
  replayPageSize?: number;
}

/** Defaults of {@link DurableEventStoreOptions}. */
export const DURABLE_EVENT_STORE_DEFAULTS = { replayPageSize: STREAM_EVENTS_PAGE_MAX } as const;

/** Checks {@link DurableEventStoreOptions} and applies {@link DURABLE_EVENT_STORE_DEFAULTS} (`scope` after). */
const parseOptions = defineOptions<DurableEventStoreOptions>()('createDurableEventStore', {
  scope: o.string().min(1).optional(),
  replayPageSize: o
    .number()
    .int()
    .min(1)
    .max(STREAM_EVENTS_PAGE_MAX)
    .default(DURABLE_EVENT_STORE_DEFAULTS.replayPageSize),
});

/**
 * The SDK's Streamable HTTP `EventStore` (resumability, MCP spec 2025-11-25 "Resumability and Redelivery")
 * on Breakwater's durable {@link StreamEventStore}: every message the transport sends on an SSE stream is
 * stored (SQLite or PostgreSQL) before it is written, and a client reconnecting with `Last-Event-ID`
 * receives the messages of that stream after it, in order, without duplicates.
 *
 * - `storeEvent` appends to the scoped stream and returns the store's event id (`<n>-<seq>`).
 * - `getStreamIdForEventId` returns the SDK's stream id, or `undefined` for an id that is unknown, pruned
 *   or of another scope (the SDK then answers 400).
 * - `replayEventsAfter` sends the later events page by page, awaiting each `send`, and returns the stream
 *   id. Priming events (the empty object the SDK stores to give a new stream a cursor) are not replayed:
 *   the client would fail to parse them as JSON-RPC messages.
 *
 * Use one per transport (per session), with `scope` set to the session id. Events are kept until the
 * store's `pruneStreamEvents` deletes them (default 1 hour), which the server must call periodically.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createDurableEventStore`) naming every bad
 *   option. `replayEventsAfter` rejects with a `BreakwaterError` (`not_found`, 404) when the id is unknown or of
 * another scope, or when its cursor is pruned mid-replay; store failures reject with the store's error.
 */
export function createDurableEventStore(
  store: StreamEventStore,
  options: DurableEventStoreOptions = {},
): EventStore {
  const parsed = parseOptions(options);
  const scope = parsed.scope ?? randomUUID();
  const pageSize = parsed.replayPageSize;

  /** The SDK's stream id of a stored stream, or undefined when the stream belongs to another scope. */
  const own = (storedId: string): StreamId | undefined => {
    const parsed = parseScoped(storedId);
    return parsed !== undefined && parsed[0] === scope ? parsed[1] : undefined;
  };

  return {
    storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
      return store.appendStreamEvent(scoped(scope, streamId), message);
    },

    async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
      const page = await store.streamEventsAfter(eventId, 0);
      return page === undefined ? undefined : own(page.streamId);
    },

    async replayEventsAfter(
      lastEventId: EventId,
      { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
    ): Promise<StreamId> {
      let page = await store.streamEventsAfter(lastEventId, pageSize);
      const streamId = page === undefined ? undefined : own(page.streamId);
      if (page === undefined || streamId === undefined) throw unknownEvent(lastEventId);
      for (;;) {
        for (const event of page.events) {
          if (!isPriming(event.message)) await send(event.eventId, event.message as JSONRPCMessage);
        }
        if (page.events.length < pageSize) return streamId;
        const cursor = page.events[page.events.length - 1]!.eventId;
        const next = await store.streamEventsAfter(cursor, pageSize);
        // The cursor was pruned while we replayed: what follows it can no longer be shown to be complete.
        if (next === undefined) throw unknownEvent(cursor);
        page = next;
      }
    },
  };
}

/**
 * A stream id as stored: scope and SDK stream id as a JSON pair, so no scope can forge another's prefix
 * (`a` + `b/x` and `a/b` + `x` stay apart, whatever characters they hold).
 */
function scoped(scope: string, streamId: StreamId): string {
  return JSON.stringify([scope, streamId]);
}

/** The `[scope, streamId]` of a stored stream id, or undefined for one this adapter did not write. */
function parseScoped(storedId: string): [string, string] | undefined {
  try {
    const value: unknown = JSON.parse(storedId);
    return Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      typeof value[1] === 'string'
      ? [value[0], value[1]]
      : undefined;
  } catch {
    return undefined;
  }
}

/** The SDK's priming event: an empty object (written with an empty `data:` line, never replayed). */
function isPriming(message: unknown): boolean {
  return (
    typeof message === 'object' &&
    message !== null &&
    !Array.isArray(message) &&
    Object.keys(message).length === 0
  );
}

function unknownEvent(eventId: string): BreakwaterError {
  return new BreakwaterError('not_found', {
    message: 'The stream event to resume after is unknown or no longer kept; start a new request.',
    details: { event_id: eventId },
  });
}

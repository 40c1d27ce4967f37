import {
  checkStreamId,
  formatStreamEventId,
  parseStreamEventId,
  pruneCutoff,
  streamEventsLimit,
  type StreamEvent,
  type StreamEventsPage,
} from '../stream-events.js';
import type { SqliteContext } from './context.js';
import { byLimit } from './limit.js';
import { fromJson, toJson } from './rows.js';

/**
 * Prepares `StreamEventStore.appendStreamEvent`.
 *
 * One UPSERT creates the stream on its first event or bumps its `last_seq`, and hands back the stream's key
 * and the new seq; the event row follows in the same `BEGIN IMMEDIATE` transaction. The write lock makes the
 * seq unique and gapless per stream, in commit order.
 */
export function prepareAppendStreamEvent(ctx: SqliteContext): (streamId: string, message: unknown) => string {
  const bump = ctx.db.prepare<[string, number, number], { streamKey: number; seq: number }>(
    `INSERT INTO streams (stream_id, last_seq, created_at, updated_at) VALUES (?, 1, ?, ?)
       ON CONFLICT (stream_id) DO UPDATE SET last_seq = last_seq + 1, updated_at = excluded.updated_at
       RETURNING stream_key AS streamKey, last_seq AS seq`,
  );
  const insert = ctx.db.prepare<[number, number, number, string]>(
    'INSERT INTO stream_events (stream_key, seq, created_at, message) VALUES (?, ?, ?, ?)',
  );
  return ctx.db.transaction((streamId: string, message: unknown): string => {
    checkStreamId(streamId);
    // Serialized before any write, so a message with no JSON form fails with nothing written.
    const text = toJson(message) ?? 'null';
    const now = ctx.clock.now();
    const ref = bump.get(streamId, now, now)!;
    insert.run(ref.streamKey, ref.seq, now, text);
    return formatStreamEventId(ref);
  }).immediate;
}

/**
 * Prepares `StreamEventStore.streamEventsAfter`: the event's own row (it must still exist: after a prune the
 * events before the cursor may be gone, and we cannot tell the client nothing was lost), then a range scan of
 * the `(stream_key, seq)` primary key, both in one read transaction so they see the same snapshot.
 */
export function prepareStreamEventsAfter(
  ctx: SqliteContext,
): (eventId: string, limit?: number) => StreamEventsPage | undefined {
  const anchor = ctx.db.prepare<[number, number], { streamId: string }>(
    `SELECT s.stream_id AS streamId FROM stream_events e JOIN streams s ON s.stream_key = e.stream_key
      WHERE e.stream_key = ? AND e.seq = ?`,
  );
  // The limit is written into the SQL (see limit.ts): one statement per page size in use.
  const after = byLimit((limit) =>
    ctx.db.prepare<[number, number], { seq: number; message: string }>(
      `SELECT seq, message FROM stream_events
        WHERE stream_key = ? AND seq > ?
        ORDER BY seq
        LIMIT ${limit}`,
    ),
  );
  const read = ctx.db.transaction((eventId: string, limit?: number): StreamEventsPage | undefined => {
    const ref = parseStreamEventId(eventId);
    if (ref === undefined) return undefined;
    const found = anchor.get(ref.streamKey, ref.seq);
    if (found === undefined) return undefined;
    const pageSize = streamEventsLimit(limit);
    const rows = pageSize === 0 ? [] : after(pageSize).all(ref.streamKey, ref.seq);
    const events: StreamEvent[] = rows.map((row) => ({
      eventId: formatStreamEventId({ streamKey: ref.streamKey, seq: row.seq }),
      message: fromJson(row.message),
    }));
    return { streamId: found.streamId, events };
  });
  return read.deferred;
}

/**
 * Prepares `StreamEventStore.pruneStreamEvents`: deletes old events through the `created_at` index, then
 * the streams whose last append is older than the cutoff and that have no event left (a stream row is kept
 * while it has events, whatever the clock did, so no event loses its stream). One transaction.
 */
export function preparePruneStreamEvents(ctx: SqliteContext): (olderThanMs?: number) => number {
  const deleteEvents = ctx.db.prepare<[number]>('DELETE FROM stream_events WHERE created_at < ?');
  const deleteStreams = ctx.db.prepare<[number]>(
    `DELETE FROM streams
      WHERE updated_at < ?
        AND NOT EXISTS (SELECT 1 FROM stream_events e WHERE e.stream_key = streams.stream_key)`,
  );
  return ctx.db.transaction((olderThanMs?: number): number => {
    const cutoff = pruneCutoff(ctx.clock.now(), olderThanMs);
    const deleted = deleteEvents.run(cutoff).changes;
    deleteStreams.run(cutoff);
    return deleted;
  }).immediate;
}

import {
  checkStreamId,
  formatStreamEventId,
  parseStreamEventId,
  pruneCutoff,
  streamEventsLimit,
  type StreamEventsPage,
} from '../stream-events.js';
import { json, ms, withTransaction, type Db, query } from './db.js';

/** What the stream event operations need: the pool, the clock and their two schema-qualified tables. */
export interface StreamDb extends Pick<Db, 'pool' | 'clock'> {
  /** `"schema".streams`. */
  readonly streams: string;
  /** `"schema".stream_events`. */
  readonly streamEvents: string;
}

/**
 * Appends a message to a stream, in one statement: the UPSERT creates the stream or bumps its `last_seq`
 * and keeps the row locked until commit, so a concurrent append to the same stream waits and takes the next
 * seq, and seqs commit in order; the INSERT writes the event with the key and seq the UPSERT returned.
 */
export async function appendStreamEvent(db: StreamDb, streamId: string, message: unknown): Promise<string> {
  checkStreamId(streamId);
  const text = json(message);
  const now = ms(db.clock.now());
  const result = await query<{ stream_key: number; seq: number }>(
    db.pool,
    `WITH stream AS (
       INSERT INTO ${db.streams} AS s (stream_id, last_seq, created_at, updated_at) VALUES ($1, 1, $2, $2)
       ON CONFLICT (stream_id) DO UPDATE SET last_seq = s.last_seq + 1, updated_at = EXCLUDED.updated_at
       RETURNING stream_key, last_seq
     )
     INSERT INTO ${db.streamEvents} (stream_key, seq, created_at, message)
     SELECT stream_key, last_seq, $2, $3::json FROM stream
     RETURNING stream_key, seq`,
    [streamId, now, text],
  );
  const row = result.rows[0]!;
  return formatStreamEventId({ streamKey: row.stream_key, seq: row.seq });
}

/**
 * The stream of `eventId` and its events after it, in one statement (one snapshot): the event's own row must
 * exist (once pruned, events before the cursor may be gone too, and we cannot tell the client it lost
 * nothing); a LATERAL range scan of the `(stream_key, seq)` primary key reads the page. No row: unknown id.
 * One row with a NULL seq: a known id with nothing after it.
 */
export async function streamEventsAfter(
  db: StreamDb,
  eventId: string,
  limit?: number,
): Promise<StreamEventsPage | undefined> {
  const ref = parseStreamEventId(eventId);
  if (ref === undefined) return undefined;
  const result = await query<{ stream_id: string; seq: number | null; message: unknown }>(
    db.pool,
    `SELECT s.stream_id, e.seq, e.message
       FROM ${db.streamEvents} a
       JOIN ${db.streams} s ON s.stream_key = a.stream_key
       LEFT JOIN LATERAL (
         SELECT seq, message FROM ${db.streamEvents}
          WHERE stream_key = a.stream_key AND seq > a.seq
          ORDER BY seq
          LIMIT $3
       ) e ON true
      WHERE a.stream_key = $1 AND a.seq = $2
      ORDER BY e.seq`,
    [ref.streamKey, ref.seq, streamEventsLimit(limit)],
  );
  const first = result.rows[0];
  if (first === undefined) return undefined;
  const events = [];
  for (const row of result.rows) {
    if (row.seq === null) continue;
    events.push({
      eventId: formatStreamEventId({ streamKey: ref.streamKey, seq: row.seq }),
      message: row.message,
    });
  }
  return { streamId: first.stream_id, events };
}

/**
 * Deletes events older than the cutoff, then the streams whose last append is older and that have no event
 * left. Two statements in one transaction: the second must see the first's deletions (one statement with
 * two CTEs would share one snapshot and keep every emptied stream until the next prune). An append racing
 * the second statement bumps `updated_at` first, or waits and creates its stream anew under a fresh key.
 */
export async function pruneStreamEvents(db: StreamDb, olderThanMs?: number): Promise<number> {
  const cutoff = ms(pruneCutoff(db.clock.now(), olderThanMs));
  return withTransaction(db.pool, async (client) => {
    const deleted = await client.query(`DELETE FROM ${db.streamEvents} WHERE created_at < $1`, [cutoff]);
    await client.query(
      `DELETE FROM ${db.streams} s
        WHERE s.updated_at < $1
          AND NOT EXISTS (SELECT 1 FROM ${db.streamEvents} e WHERE e.stream_key = s.stream_key)`,
      [cutoff],
    );
    return deleted.rowCount ?? 0;
  });
}

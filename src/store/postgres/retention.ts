import {
  SIZE_KINDS,
  SIZE_TABLES,
  createRetention,
  type JobsBatch,
  type RetentionBackend,
  type RetentionStore,
  type SizeKind,
} from '../retention.js';
import { ms, query, withTransaction } from './db.js';
import type { PgRunner } from './runner.js';

/** A count as node-postgres returns it with the store's types (BIGINT as a number). */
type Count = { n: number };

/**
 * `store.retention` on PostgreSQL. Each batch is one short transaction of at most `limit` rows of its kind,
 * picked along an index on its age column, oldest first, with `FOR UPDATE SKIP LOCKED`: a row another
 * transaction holds (a retry from the dead letter, a replay, a `begin` replacing an expired record) is left
 * for the next prune instead of being waited for, and the conditions are checked again on the locked row,
 * so a row that changed meanwhile (a dead letter retried: pending again) is not removed. Several processes
 * pruning at once take disjoint rows.
 */
export function createPostgresRetention(runner: PgRunner): RetentionStore {
  const t = (name: string) => runner.table(name);
  const { pool } = runner;
  // The jobs a batch removes: finished ones of one status, walked along jobs_finished (migration 12) from
  // where the previous batch stopped. A job its delivery points at qualifies only once the inbox cutoff passed
  // too, and goes with that delivery (the foreign key would refuse the job alone). $1 status, $2 from,
  // $3 cutoff, $4 inbox cutoff.
  const walk = `FROM ${t('jobs')} j LEFT JOIN ${t('webhook_inbox')} w ON w.job_id = j.id
   WHERE j.status = $1 AND j.finished_at >= $2 AND j.finished_at < $3
     AND (w.id IS NULL OR j.finished_at < $4)`;
  const pickJobs = `SELECT j.id, j.finished_at, w.id AS inbox_id ${walk}
   ORDER BY j.finished_at LIMIT $5 FOR UPDATE OF j SKIP LOCKED`;
  const countJobs = `SELECT count(*) AS jobs, coalesce(sum(j.next_seq - 1), 0)::bigint AS job_events,
          count(w.id) AS webhook_inbox ${walk}`;
  const SETTLED = `settled_at < $1 AND state IN ('succeeded', 'failed')`;

  const deleteBatch = async (sql: string, values: unknown[]) =>
    (await query(pool, sql, values)).rowCount ?? 0;
  const count = async (sql: string, values: unknown[]) => (await query<Count>(pool, sql, values)).rows[0]!.n;

  /**
   * Those of `tables` autovacuum does not look after, in their order: all of them when `autovacuum` or
   * `track_counts` (autovacuum's only source of dead-row counts) is off on the server, else those whose
   * `autovacuum_enabled` storage parameter is false.
   */
  const unattended = async (tables: readonly string[]): Promise<string[]> => {
    const result = await pool.query<{ relname: string }>(
      `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = ANY ($2::text[]) AND c.relkind = 'r'
          AND (current_setting('autovacuum')::boolean = false
               OR current_setting('track_counts')::boolean = false
               OR EXISTS (SELECT 1 FROM unnest(c.reloptions) AS o(option)
                           WHERE starts_with(o.option, 'autovacuum_enabled=')
                             AND NOT substring(o.option FROM 20)::boolean))`,
      [runner.schema, tables],
    );
    const found = new Set(result.rows.map((row) => row.relname));
    return tables.filter((name) => found.has(name));
  };

  const backend: RetentionBackend = {
    jobsBatch: (status, cutoff, inboxCutoff, from, limit) =>
      withTransaction(pool, async (client): Promise<JobsBatch> => {
        const picked = await client.query<{ id: string; finished_at: number; inbox_id: string | null }>(
          pickJobs,
          [status, ms(from), ms(cutoff), ms(inboxCutoff), limit],
        );
        const batch: JobsBatch = { jobs: 0, jobEvents: 0, webhookInbox: 0, lastFinishedAt: null };
        if (picked.rows.length === 0) return batch;
        const ids = picked.rows.map((row) => row.id);
        const inboxIds = picked.rows.flatMap((row) => (row.inbox_id === null ? [] : [row.inbox_id]));
        if (inboxIds.length > 0) {
          // job_id checked again: a replay may have moved the delivery to a new job since the pick.
          const deliveries = await client.query(
            `DELETE FROM ${t('webhook_inbox')} WHERE id = ANY ($1::text[]) AND job_id = ANY ($2::text[])`,
            [inboxIds, ids],
          );
          batch.webhookInbox = deliveries.rowCount ?? 0;
        }
        // Deleted here rather than by the cascade, to count them.
        const events = await client.query(`DELETE FROM ${t('job_events')} WHERE job_id = ANY ($1::text[])`, [
          ids,
        ]);
        const jobs = await client.query(`DELETE FROM ${t('jobs')} WHERE id = ANY ($1::text[])`, [ids]);
        batch.jobEvents = events.rowCount ?? 0;
        batch.jobs = jobs.rowCount ?? 0;
        batch.lastFinishedAt = picked.rows[picked.rows.length - 1]!.finished_at;
        return batch;
      }),
    countJobs: async (status, cutoff, inboxCutoff) => {
      const result = await query<{ jobs: number; job_events: number; webhook_inbox: number }>(
        pool,
        countJobs,
        [status, Number.MIN_SAFE_INTEGER, ms(cutoff), ms(inboxCutoff)],
      );
      const row = result.rows[0]!;
      return { jobs: row.jobs, jobEvents: row.job_events, webhookInbox: row.webhook_inbox };
    },
    streamEventsBatch: (cutoff, limit) =>
      deleteBatch(
        `DELETE FROM ${t('stream_events')} WHERE (stream_key, seq) IN (
           SELECT stream_key, seq FROM ${t('stream_events')} WHERE created_at < $1
            ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [ms(cutoff), limit],
      ),
    // A stream is kept while it has events. An append racing the delete holds (or takes) the stream row first
    // and bumps updated_at, which the locked re-check then sees; or it waits and creates the stream anew.
    emptyStreamsBatch: (cutoff, limit) =>
      deleteBatch(
        `DELETE FROM ${t('streams')} s WHERE s.stream_key IN (
           SELECT stream_key FROM ${t('streams')} WHERE updated_at < $1 ORDER BY updated_at LIMIT $2
              FOR UPDATE SKIP LOCKED)
           AND s.updated_at < $1
           AND NOT EXISTS (SELECT 1 FROM ${t('stream_events')} e WHERE e.stream_key = s.stream_key)`,
        [ms(cutoff), limit],
      ),
    countStreamEvents: (cutoff) =>
      count(`SELECT count(*) AS n FROM ${t('stream_events')} WHERE created_at < $1`, [ms(cutoff)]),
    // As idempotency.prune: the outer expires_at test is checked again on a row a concurrent begin replaced.
    idempotencyBatch: (now, limit) =>
      deleteBatch(
        `DELETE FROM ${t('idempotency_records')} WHERE (scope, key) IN (
           SELECT scope, key FROM ${t('idempotency_records')} WHERE expires_at <= $1
            ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
           AND expires_at <= $1`,
        [ms(now), limit],
      ),
    countIdempotency: (now) =>
      count(`SELECT count(*) AS n FROM ${t('idempotency_records')} WHERE expires_at <= $1`, [ms(now)]),
    // Picked by settled_at alone, so the only index on it (operations_settled) serves the walk whatever the
    // statistics say: settled_at is set exactly when an operation settles. The state test, the rule itself,
    // is applied to the picked rows. A settled operation never changes again, so nothing else is re-checked.
    operationsBatch: (cutoff, limit) =>
      deleteBatch(
        `DELETE FROM ${t('operations')} WHERE id IN (
           SELECT id FROM ${t('operations')} WHERE settled_at < $1
            ORDER BY settled_at LIMIT $2 FOR UPDATE SKIP LOCKED)
           AND state IN ('succeeded', 'failed')`,
        [ms(cutoff), limit],
      ),
    countOperations: (cutoff) =>
      count(`SELECT count(*) AS n FROM ${t('operations')} WHERE ${SETTLED}`, [ms(cutoff)]),
    vacuum: async (tables, mode) => {
      const chosen = mode === 'always' ? [...tables] : await unattended(tables);
      // One table at a time, outside any transaction (VACUUM cannot run in one); SKIP_LOCKED: a table another
      // vacuum holds is skipped, never waited for.
      for (const name of chosen) await pool.query(`VACUUM (SKIP_LOCKED) ${t(name)}`);
      return chosen;
    },
    size: async () => {
      // One statement, one snapshot: every count and the bytes of the schema's tables (indexes and TOAST
      // included) as of the same moment.
      const counts = SIZE_KINDS.map((kind) => `(SELECT count(*) FROM ${t(SIZE_TABLES[kind])}) AS "${kind}"`);
      const result = await pool.query<Record<SizeKind | 'bytes', number>>(
        `SELECT ${counts.join(', ')},
                (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
                   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = $1 AND c.relkind = 'r') AS bytes`,
        [runner.schema],
      );
      const row = result.rows[0]!;
      const rows = Object.fromEntries(SIZE_KINDS.map((kind) => [kind, row[kind]])) as Record<
        SizeKind,
        number
      >;
      return { measuredAt: runner.clock.now(), rows, bytes: row.bytes };
    },
  };
  return createRetention(backend, runner.clock, (fn) => runner.run(fn));
}

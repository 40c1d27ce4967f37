/**
 * The claim function of migration 11: migration 8's `claim_jobs` with a sixth argument, the ids of the jobs
 * whose runs the caller holds (`JobStore.claim`'s `exclude`): their expired leases are passed over by both
 * the reaping and the reclaiming scans, so a worker paused past its own lease never hands itself a second run
 * of a job it runs, nor ends it as `lease_expired` under its running handler (docs/jobs.md, "Leases"). Kept
 * in its own file for length; what the rest does is explained in the comment inside and in `claim.ts`.
 */
export const claimJobsWithExclude = (s: string): string => `
-- The claim (see claim.ts for what it does), as a function for one reason: its plan. The jobs table is
-- a queue, so its statistics are always behind: after a burst of enqueues (a webhook storm) they still
-- say a few jobs are pending, and the planner then fetches every due job through a bitmap scan and sorts
-- them all, on every claim (docs/performance.md#postgresql-store). The
-- function plans with sequential scans, bitmap scans and sorts disabled, so pending jobs are always
-- walked in claim order along jobs_pending and the walk stops at the limit, whatever the statistics say
-- (the few sorts it cannot avoid, over the rows it keeps, still run; the expired-lease probes may read
-- the running jobs through jobs_status_id rather than jobs_leases: these settings cannot choose between
-- two indexes). Disabled paths cost 1e10 to the planner, which would start JIT compilation (seconds):
-- jit is off. PL/pgSQL caches the plan per connection. Pending and reclaimable jobs are locked by two
-- limited scans; the better of the two lists wins (a row locked there and not chosen stays as it was).
-- $1 now, $2 types (empty: all), $3 limit (NULL: none), $4 owner, $5 lease ms, $6 the ids of jobs the
-- caller runs (empty: none): their expired leases are neither reaped nor reclaimed (JobStore.claim).
CREATE FUNCTION ${s}.claim_jobs(bigint, text[], integer, text, bigint, text[]) RETURNS SETOF ${s}.jobs
  LANGUAGE plpgsql
  SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off SET jit = off
  AS $fn$
BEGIN
  RETURN QUERY
   WITH reapable AS (
     SELECT id FROM ${s}.jobs
     WHERE status = 'in_progress' AND lease_expires_at <= $1
       AND (cancel_requested_at IS NOT NULL OR attempts >= max_attempts)
       AND (cardinality($2::text[]) = 0 OR type = ANY ($2::text[]))
       AND NOT (id = ANY ($6::text[]))
     FOR UPDATE SKIP LOCKED
   ),
   reaped AS (
     UPDATE ${s}.jobs j SET
       status = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'canceled' ELSE 'failed' END,
       error = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.error
                    ELSE jsonb_build_object('code', 'lease_expired', 'kind', 'transient', 'message',
                           format('The worker''s lease expired before attempt %s of %s finished, and no '
                                  'attempts are left.', j.attempts, j.max_attempts))
               END,
       lease_owner = NULL,
       lease_expires_at = NULL,
       next_seq = j.next_seq + 1,
       updated_at = $1,
       finished_at = $1
     FROM reapable r
     WHERE j.id = r.id
     RETURNING j.id, j.status, j.attempts, j.error, j.next_seq - 1 AS seq
   ),
   -- Walked along jobs_pending in claim order, stopping at the limit (see above): stale statistics (a
   -- backlog enqueued since the last ANALYZE, as in a storm) never make it fetch and sort every due job.
   pending AS (
     SELECT id, priority, run_at FROM ${s}.jobs j
     WHERE status = 'pending' AND run_at <= $1 AND (j.ordering_key IS NULL OR (
            NOT EXISTS (SELECT 1 FROM ${s}.jobs ahead
                         WHERE ahead.ordering_key = j.ordering_key AND ahead.id < j.id
                           AND ahead.status IN ('pending', 'in_progress'))
            AND NOT EXISTS (SELECT 1 FROM ${s}.jobs running
                             WHERE running.ordering_key = j.ordering_key AND running.status = 'in_progress')))
       AND (cardinality($2::text[]) = 0 OR type = ANY ($2::text[]))
     ORDER BY priority DESC, run_at, id
     LIMIT $3
     FOR UPDATE SKIP LOCKED
   ),
   expired AS (
     SELECT id, priority, run_at FROM ${s}.jobs
     WHERE status = 'in_progress' AND lease_expires_at <= $1
       AND cancel_requested_at IS NULL AND attempts < max_attempts
       AND (cardinality($2::text[]) = 0 OR type = ANY ($2::text[]))
       AND NOT (id = ANY ($6::text[]))
     ORDER BY priority DESC, run_at, id
     LIMIT $3
     FOR UPDATE SKIP LOCKED
   ),
   candidates AS (
     SELECT id FROM (SELECT * FROM pending UNION ALL SELECT * FROM expired) due
     ORDER BY priority DESC, run_at, id
     LIMIT $3
   ),
   claimed AS (
     UPDATE ${s}.jobs j SET
       status = 'in_progress',
       attempts = j.attempts + 1,
       lease_token = j.lease_token + 1,
       lease_owner = $4,
       lease_expires_at = $1 + $5::bigint,
       next_seq = j.next_seq + 1,
       updated_at = $1
     FROM candidates c
     WHERE j.id = c.id
     RETURNING j.*
   ),
   written AS (
     INSERT INTO ${s}.job_events (job_id, seq, type, occurred_at, payload)
     SELECT id, next_seq - 1, 'job.started', $1, jsonb_build_object('attempt', attempts) FROM claimed
     UNION ALL
     SELECT id, seq,
            CASE WHEN status = 'canceled' THEN 'job.canceled' ELSE 'job.failed' END,
            $1,
            CASE WHEN status = 'canceled' THEN jsonb_build_object('attempts', attempts)
                 ELSE jsonb_build_object('error', error, 'attempts', attempts)
            END
     FROM reaped
   )
   SELECT * FROM claimed;
END
$fn$;
`;

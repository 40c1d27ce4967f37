/**
 * Ordering keys (`NewJob.orderingKey`): one entity's jobs run one at a time, in id (creation) order.
 *
 * The SQL condition that the pending job `alias` may be claimed: it has no key, or no job of its key created
 * before it is unfinished, and none of its key is running. Claim and nextRunAt share it, so a worker never
 * wakes for a job it cannot claim (a spin). Each half is one probe of a partial index holding only
 * unfinished keyed jobs (`jobs_ordering`, `jobs_ordering_running`).
 *
 * Read in the statement's snapshot: two jobs of one key never come back from one claim (the later sees the
 * earlier pending ahead of it), and a concurrent claim that has not committed its lease still shows the job
 * pending, which blocks its successors too. What a snapshot cannot see is an enqueue of the same key from
 * another process whose id is smaller but whose commit comes later than a claim of a later job: ids order
 * arrivals, so keep one entity's producer in one process (a webhook source's deliveries are) if that race
 * matters. The `jobs_ordering_successor` trigger announces the next job when one ends.
 */
export function notBlocked(jobs: string, alias: string): string {
  return `(${alias}.ordering_key IS NULL OR (
       NOT EXISTS (SELECT 1 FROM ${jobs} ahead
                    WHERE ahead.ordering_key = ${alias}.ordering_key AND ahead.id < ${alias}.id
                      AND ahead.status IN ('pending', 'in_progress'))
   AND NOT EXISTS (SELECT 1 FROM ${jobs} running
                    WHERE running.ordering_key = ${alias}.ordering_key AND running.status = 'in_progress')))`;
}

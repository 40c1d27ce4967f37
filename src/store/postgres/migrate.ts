import type pg from 'pg';
import { claimJobsWithExclude } from './claim-function.js';
import { quoteIdent, withTransaction } from './db.js';

/**
 * Schema migrations of the PostgreSQL job store, applied in order at start. Each is one step forward
 * (never edited once released: add a new one instead) and runs in the same transaction as the others
 * still missing, so a failure leaves the schema as it was.
 */

/** One migration: a version (1, 2, …, in order), a name for `schema_migrations`, and its SQL. */
export interface Migration {
  version: number;
  name: string;
  /** The SQL, given the quoted schema name (`"breakwater"`). */
  sql: (schema: string) => string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'jobs and job events',
    sql: (s) => `
      -- Ids are 'job_' + UUIDv7 and sort by creation time as plain bytes: the C collation keeps that order
      -- (and the fast comparisons) whatever the database's collation. Times are ms since the epoch from the
      -- store's injected clock, never now(), so a fake clock drives every timestamp in tests.
      CREATE TABLE ${s}.jobs (
        id text COLLATE "C" PRIMARY KEY,
        type text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'in_progress', 'completed', 'failed', 'canceled')),
        payload jsonb NOT NULL,
        result jsonb,
        error jsonb,
        attempts integer NOT NULL DEFAULT 0,
        max_attempts integer NOT NULL,
        run_at bigint NOT NULL,
        priority integer NOT NULL DEFAULT 0,
        idempotency_key text,
        timeout_ms bigint,
        lease_owner text,
        lease_token bigint NOT NULL DEFAULT 0,
        lease_expires_at bigint,
        cancel_requested_at bigint,
        -- The seq of this job's next event: taken and incremented by the statement that writes the event,
        -- under the row lock that statement holds, so seqs are gapless and never collide.
        next_seq integer NOT NULL DEFAULT 1,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        finished_at bigint
      );

      -- Enqueue's idempotency: INSERT … ON CONFLICT on this index, never check-then-insert.
      CREATE UNIQUE INDEX jobs_idempotency_key ON ${s}.jobs (type, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
      -- Claim's two kinds of due jobs: pending ones in claim order, and leases by expiry.
      CREATE INDEX jobs_pending ON ${s}.jobs (priority DESC, run_at, id) WHERE status = 'pending';
      CREATE INDEX jobs_leases ON ${s}.jobs (lease_expires_at) WHERE status = 'in_progress';
      -- list() by status, newest first.
      CREATE INDEX jobs_status_id ON ${s}.jobs (status, id);

      CREATE TABLE ${s}.job_events (
        job_id text COLLATE "C" NOT NULL REFERENCES ${s}.jobs (id) ON DELETE CASCADE,
        seq integer NOT NULL,
        type text NOT NULL,
        occurred_at bigint NOT NULL,
        payload jsonb NOT NULL,
        PRIMARY KEY (job_id, seq)
      );

      -- Notifications (StoreNotification as JSON) on the channel '<schema>_jobs'. Triggers send them, so
      -- every change that makes a job available, asks for a cancel or writes an event notifies, in the
      -- transaction of the change (delivered on commit, dropped on rollback), whichever statement made it,
      -- an operator's manual UPDATE included.
      CREATE FUNCTION ${s}.notify_job_available() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM pg_notify(TG_TABLE_SCHEMA || '_jobs',
          json_build_object('kind', 'job_available', 'type', NEW.type, 'runAt', NEW.run_at)::text);
        RETURN NULL;
      END
      $fn$;
      CREATE FUNCTION ${s}.notify_cancel_requested() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM pg_notify(TG_TABLE_SCHEMA || '_jobs',
          json_build_object('kind', 'cancel_requested', 'jobId', NEW.id)::text);
        RETURN NULL;
      END
      $fn$;
      CREATE FUNCTION ${s}.notify_job_event() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM pg_notify(TG_TABLE_SCHEMA || '_jobs',
          json_build_object('kind', 'job_event', 'jobId', NEW.job_id, 'seq', NEW.seq, 'eventType', NEW.type)::text);
        RETURN NULL;
      END
      $fn$;

      -- A job becomes available when it is inserted pending (enqueue) or moves back to pending or to a new
      -- run_at (a scheduled retry, a released lease, a retry from the dead letter).
      CREATE TRIGGER jobs_available_on_insert AFTER INSERT ON ${s}.jobs FOR EACH ROW
        WHEN (NEW.status = 'pending') EXECUTE FUNCTION ${s}.notify_job_available();
      CREATE TRIGGER jobs_available_on_update AFTER UPDATE OF status, run_at ON ${s}.jobs FOR EACH ROW
        WHEN (NEW.status = 'pending' AND (OLD.status <> 'pending' OR OLD.run_at <> NEW.run_at))
        EXECUTE FUNCTION ${s}.notify_job_available();
      -- A cancel request on a running job: its worker (in any process) aborts the handler. Sent on every
      -- request, a repeated cancel included: a hint lost while a listener reconnected is sent again.
      CREATE TRIGGER jobs_cancel_requested AFTER UPDATE OF cancel_requested_at ON ${s}.jobs FOR EACH ROW
        WHEN (NEW.status = 'in_progress' AND NEW.cancel_requested_at IS NOT NULL)
        EXECUTE FUNCTION ${s}.notify_cancel_requested();
      CREATE TRIGGER job_events_notify AFTER INSERT ON ${s}.job_events FOR EACH ROW
        EXECUTE FUNCTION ${s}.notify_job_event();
    `,
  },
  {
    version: 2,
    name: 'pending jobs by run_at',
    sql: (s) => `
      -- nextRunAt: the earliest run_at among pending jobs is the first entry (with types, the first of the
      -- walk whose type matches). jobs_pending leads with priority, so without this min(run_at) read every
      -- pending job, on every claim round of an idle worker.
      CREATE INDEX jobs_pending_run_at ON ${s}.jobs (run_at) WHERE status = 'pending';
    `,
  },
  {
    version: 3,
    name: 'stream events',
    sql: (s) => `
      -- One row per resumable stream. stream_key is the stream's number in event ids ('<key>-<seq>'): an
      -- identity never hands a key out twice, so an old Last-Event-ID of a pruned stream can never resolve to
      -- a new one. last_seq is bumped by the append that uses it, under that row's lock until commit, so
      -- seqs of one stream are gapless and commit in order (a sequence would not: a later value can commit
      -- first, and a reader would skip the earlier one for good).
      CREATE TABLE ${s}.streams (
        stream_key bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        stream_id text NOT NULL UNIQUE,
        last_seq bigint NOT NULL,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL
      );
      -- Prune: streams whose last append is older than the cutoff.
      CREATE INDEX streams_updated_at ON ${s}.streams (updated_at);

      -- json, not jsonb: the message is replayed as it was sent (key order kept), and json accepts an
      -- escaped NUL character in a string, which jsonb refuses.
      CREATE TABLE ${s}.stream_events (
        stream_key bigint NOT NULL REFERENCES ${s}.streams (stream_key) ON DELETE CASCADE,
        seq bigint NOT NULL,
        created_at bigint NOT NULL,
        message json NOT NULL,
        PRIMARY KEY (stream_key, seq)
      );
      -- Prune: events older than the cutoff.
      CREATE INDEX stream_events_created_at ON ${s}.stream_events (created_at);
    `,
  },
  {
    version: 4,
    name: 'ordering keys',
    sql: (s) => `
      ALTER TABLE ${s}.jobs ADD COLUMN ordering_key text;

      -- Claim's "is a job of my key ahead of me?": one probe of the key's unfinished jobs below my id. Only
      -- unfinished keyed jobs are indexed, so the index holds the backlog, not the history.
      CREATE INDEX jobs_ordering ON ${s}.jobs (ordering_key, id)
        WHERE ordering_key IS NOT NULL AND status IN ('pending', 'in_progress');
      -- Claim's "is a job of my key running?" (even a later one: a dead letter retried by hand, or an id
      -- that lost a race between processes): one probe of a tiny index.
      CREATE INDEX jobs_ordering_running ON ${s}.jobs (ordering_key)
        WHERE ordering_key IS NOT NULL AND status = 'in_progress';

      -- When a keyed job ends, the next pending job of its key may be claimable: announce it, so a worker
      -- that passed it over as blocked (its nextRunAt leaves blocked jobs out) wakes now, not at its next
      -- safety-net poll. A trigger, like the other notifications: every path that ends a job sends it (a
      -- settle, a cancel, a claim reaping an expired lease, an operator's UPDATE). It runs after the
      -- statement's own changes, so a successor leased by the same claim is seen running and not announced.
      CREATE FUNCTION ${s}.notify_ordering_successor() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        next_job record;
      BEGIN
        SELECT type, status, run_at INTO next_job FROM ${s}.jobs
         WHERE ordering_key = NEW.ordering_key AND status IN ('pending', 'in_progress')
         ORDER BY id
         LIMIT 1;
        IF FOUND AND next_job.status = 'pending' THEN
          PERFORM pg_notify(TG_TABLE_SCHEMA || '_jobs',
            json_build_object('kind', 'job_available', 'type', next_job.type, 'runAt', next_job.run_at)::text);
        END IF;
        RETURN NULL;
      END
      $fn$;
      CREATE TRIGGER jobs_ordering_successor AFTER UPDATE OF status ON ${s}.jobs FOR EACH ROW
        WHEN (NEW.ordering_key IS NOT NULL AND OLD.status IN ('pending', 'in_progress')
              AND NEW.status IN ('completed', 'failed', 'canceled'))
        EXECUTE FUNCTION ${s}.notify_ordering_successor();
    `,
  },
  {
    version: 5,
    name: 'webhook inbox',
    sql: (s) => `
      -- The inbox source of a job enqueued for a delivery (acceptWebhook, replayWebhook), else NULL: the
      -- backlog of a source is a count over a partial index that holds only its unfinished jobs.
      ALTER TABLE ${s}.jobs ADD COLUMN inbox_source text;
      CREATE INDEX jobs_inbox_backlog ON ${s}.jobs (inbox_source)
        WHERE inbox_source IS NOT NULL AND status IN ('pending', 'in_progress');

      -- One row per delivery, unique per (source, event_id): the constraint is the deduplication (INSERT …
      -- ON CONFLICT DO NOTHING). job_id is the delivery's latest job (a replay moves it). body is bytea, the
      -- UTF-8 bytes of the body as received: text cannot hold a NUL character, and the body must be kept
      -- exactly.
      CREATE TABLE ${s}.webhook_inbox (
        id text COLLATE "C" PRIMARY KEY,
        source text NOT NULL,
        event_id text NOT NULL,
        event_type text NOT NULL,
        received_at bigint NOT NULL,
        occurred_at bigint,
        body bytea NOT NULL,
        job_id text COLLATE "C" NOT NULL REFERENCES ${s}.jobs (id),
        replays integer NOT NULL DEFAULT 0,
        UNIQUE (source, event_id)
      );
      -- listWebhooks of one source, newest first (ids are UUIDv7 in the C collation), without a sort.
      CREATE INDEX webhook_inbox_source_id ON ${s}.webhook_inbox (source, id);
    `,
  },
  {
    version: 6,
    name: 'idempotency, operations, audit',
    sql: (s) => `
      -- Inbound idempotency records, one per (scope, key): begin's INSERT … ON CONFLICT DO UPDATE … WHERE on
      -- the primary key decides, never a check-then-insert. response is json (not jsonb): json keeps an
      -- escaped NUL in a body string, which jsonb refuses.
      CREATE TABLE ${s}.idempotency_records (
        scope text NOT NULL,
        key text NOT NULL,
        fingerprint text NOT NULL,
        state text NOT NULL CHECK (state IN ('in_progress', 'completed')),
        token text NOT NULL,
        response json,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        locked_until bigint NOT NULL,
        expires_at bigint NOT NULL,
        PRIMARY KEY (scope, key)
      );
      -- prune: the expired records, without a scan.
      CREATE INDEX idempotency_records_expires_at ON ${s}.idempotency_records (expires_at);

      -- The outbound operation ledger. version is update's compare-and-set token. JSON values are json, not
      -- jsonb, as stream events are: the request is kept as the caller serialized it (key order too), and an
      -- escaped NUL in a string is accepted, as on SQLite.
      CREATE TABLE ${s}.operations (
        id text COLLATE "C" PRIMARY KEY,
        action text NOT NULL,
        target text NOT NULL,
        key text,
        request json NOT NULL,
        correlation_id text NOT NULL,
        retry_allowed boolean NOT NULL,
        reconcile json,
        state text NOT NULL
          CHECK (state IN ('pending', 'in_flight', 'succeeded', 'failed', 'unknown', 'needs_attention')),
        attempts integer NOT NULL DEFAULT 0,
        version integer NOT NULL DEFAULT 1,
        observation text,
        result json,
        error json,
        evidence json,
        recovery_deadline_at bigint NOT NULL,
        next_check_at bigint,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        settled_at bigint
      );
      -- begin's key: INSERT … ON CONFLICT on this index. Partial, so operations without a key never collide.
      CREATE UNIQUE INDEX operations_key ON ${s}.operations (action, key) WHERE key IS NOT NULL;
      -- The recovery loops' list: operations in some states whose next check is due.
      CREATE INDEX operations_state_check ON ${s}.operations (state, next_check_at);

      -- The audit chain. seq is assigned by append under a transaction-scoped advisory lock (gapless, in
      -- commit order); body is bytea, the UTF-8 bytes of the sealer's text: text cannot hold a NUL, and the
      -- body must be kept exactly as hashed.
      CREATE TABLE ${s}.audit_log (
        seq bigint PRIMARY KEY,
        body bytea NOT NULL,
        prev_hash text NOT NULL,
        hash text NOT NULL
      );
    `,
  },
  {
    version: 7,
    name: 'counters and routes',
    sql: (s) => `
      -- Counters (rate-limit windows, token buckets, spend budgets): one JSON state per key, changed by a step
      -- run while the row is locked (SELECT … FOR UPDATE; a new key: the insert's conflict). expires_at NULL:
      -- kept until changed; a row with expires_at <= now reads as absent. json (not jsonb) as elsewhere:
      -- the state comes back as it was written, an escaped NUL included.
      CREATE TABLE ${s}.counters (
        key text PRIMARY KEY,
        state json NOT NULL,
        expires_at bigint,
        updated_at bigint NOT NULL
      );
      -- prune: the expired keys, without a scan. Partial: keys that never expire are not indexed.
      CREATE INDEX counters_expires_at ON ${s}.counters (expires_at) WHERE expires_at IS NOT NULL;

      -- Versioned routes: immutable versions, numbered per name by create under the head row's lock (from
      -- route_heads.latest, not a max(version) lookup). Names are ASCII; the C collation makes heads() list
      -- them in byte order, as SQLite does.
      CREATE TABLE ${s}.route_versions (
        name text COLLATE "C" NOT NULL,
        version integer NOT NULL,
        definition json NOT NULL,
        note text,
        created_at bigint NOT NULL,
        PRIMARY KEY (name, version)
      );
      -- One row per route: the deployed version (NULL while only drafts exist), the newest one, and a
      -- revision bumped by every create and deploy of the route.
      CREATE TABLE ${s}.route_heads (
        name text COLLATE "C" PRIMARY KEY,
        deployed integer,
        latest integer NOT NULL,
        deployed_at bigint,
        revision bigint NOT NULL
      );
      -- The revision of all routes: one row, bumped in the transaction of every create and deploy (a row,
      -- not a sequence: a sequence moves on a rolled-back create too, and its value is not transactional).
      CREATE TABLE ${s}.route_revision (
        id smallint PRIMARY KEY CHECK (id = 1),
        revision bigint NOT NULL
      );
      INSERT INTO ${s}.route_revision (id, revision) VALUES (1, 0);
    `,
  },
  {
    version: 8,
    name: 'job watchers, claim function',
    sql: (s) => `
      -- A NOTIFY in a transaction makes its commit wait for one server-wide lock, held until the commit is
      -- flushed, so a notification per job event (started, completed, …) serialized every worker's commits
      -- whether anyone listened or not. Only a follower (SSE, MCP progress) needs a job's events live, so it
      -- registers here first (watchEvents) and the trigger announces the events of watched jobs only.
      -- watcher: one id per follow, so two followers of one job come and go independently. No foreign key:
      -- a watch of a job that does not exist inserts nothing (watchEvents selects the job row).
      CREATE TABLE ${s}.job_watchers (
        job_id text COLLATE "C" NOT NULL,
        watcher text NOT NULL,
        created_at bigint NOT NULL,
        PRIMARY KEY (job_id, watcher)
      );
      CREATE OR REPLACE FUNCTION ${s}.notify_job_event() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF EXISTS (SELECT 1 FROM ${s}.job_watchers WHERE job_id = NEW.job_id) THEN
          PERFORM pg_notify(TG_TABLE_SCHEMA || '_jobs',
            json_build_object('kind', 'job_event', 'jobId', NEW.job_id, 'seq', NEW.seq, 'eventType', NEW.type)::text);
        END IF;
        RETURN NULL;
      END
      $fn$;

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
      -- $1 now, $2 types (empty: all), $3 limit (NULL: none), $4 owner, $5 lease ms.
      CREATE FUNCTION ${s}.claim_jobs(bigint, text[], integer, text, bigint) RETURNS SETOF ${s}.jobs
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
         -- \`run_at <= $1\`, not \`run_at <= $1\`: the planner cannot answer it from jobs_pending_run_at, so
         -- stale statistics (a backlog enqueued since the last ANALYZE, as in a storm) can never make it fetch
         -- and sort every due job through that index instead of walking jobs_pending in order.
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
    `,
  },
  {
    version: 9,
    name: 'owners of jobs and operations',
    sql: (s) => `
      -- The principal that started a job or an operation (docs/architecture.md#identity-and-ownership), NULL
      -- for rows made before owners were kept and by the gateway itself (only admin sees those). ADD COLUMN
      -- without a default changes the catalog only; claim_jobs returns SETOF jobs, so it returns the column
      -- too.
      ALTER TABLE ${s}.jobs ADD COLUMN owner text;
      ALTER TABLE ${s}.operations ADD COLUMN owner text;

      -- "My jobs" (GET /jobs of a non-admin, an MCP client's tasks/list) and "my operations": the owner's
      -- rows newest first (ids in the C collation), keyset-paginated, without reading anyone else's. Partial:
      -- ownerless rows cost no entry; owner = $1 implies owner IS NOT NULL for the planner. Built inside the
      -- migration's transaction (not CONCURRENTLY): writes to these tables wait while it is built, once.
      CREATE INDEX jobs_owner_id ON ${s}.jobs (owner, id) WHERE owner IS NOT NULL;
      CREATE INDEX operations_owner_id ON ${s}.operations (owner, id) WHERE owner IS NOT NULL;
    `,
  },
  {
    version: 10,
    name: 'api keys and admin sessions',
    sql: (s) => `
      -- API keys (docs/security.md#api-keys): the secret's SHA-256, never the secret. Looked up by id (the
      -- key carries it), so one primary-key probe per verification. json (not jsonb) as elsewhere: metadata
      -- keeps its order.
      CREATE TABLE ${s}.api_keys (
        id text COLLATE "C" PRIMARY KEY,
        name text NOT NULL,
        hash text NOT NULL,
        scopes json NOT NULL,
        metadata json NOT NULL,
        trusted_backend boolean NOT NULL,
        ai json,
        created_at bigint NOT NULL,
        expires_at bigint,
        revoked_at bigint
      );
      -- list: newest first, and the page after a key, without a sort (ids in byte order, as on SQLite).
      CREATE INDEX api_keys_created ON ${s}.api_keys (created_at, id);
      -- countActive and create's bound: only keys not revoked are indexed, by expiry.
      CREATE INDEX api_keys_unrevoked ON ${s}.api_keys (expires_at) WHERE revoked_at IS NULL;

      -- Server-side admin sessions: the session id's hash, never the id.
      CREATE TABLE ${s}.admin_sessions (
        id_hash text COLLATE "C" PRIMARY KEY,
        principal_id text NOT NULL,
        client_address text,
        created_at bigint NOT NULL,
        expires_at bigint NOT NULL,
        revoked_at bigint
      );
      -- revokeAll and create's bound per principal: the principal's unrevoked sessions.
      CREATE INDEX admin_sessions_principal ON ${s}.admin_sessions (principal_id, created_at)
        WHERE revoked_at IS NULL;
      -- prune: the expired sessions, oldest first, without a scan.
      CREATE INDEX admin_sessions_expires_at ON ${s}.admin_sessions (expires_at);
    `,
  },
  {
    version: 11,
    name: 'claim excluding the runs the caller holds',
    // A new overload beside migration 8's five-argument function, which stays for the processes of the
    // previous release still claiming during a rolling upgrade.
    sql: (s) => claimJobsWithExclude(s),
  },
  {
    version: 12,
    name: 'retention: finished jobs, settled operations, deliveries by job',
    sql: (s) => `
      -- store.retention.prune walks finished jobs of one status oldest first, and settled operations oldest
      -- first (retention.ts). finished_at is set when a job ends and cleared when a dead letter is retried,
      -- so only finished jobs are indexed: pending and running ones cost no entry. settled_at is set once.
      CREATE INDEX jobs_finished ON ${s}.jobs (status, finished_at) WHERE finished_at IS NOT NULL;
      CREATE INDEX operations_settled ON ${s}.operations (settled_at) WHERE settled_at IS NOT NULL;
      -- The child side of webhook_inbox's foreign key: deleting a job checks that no delivery points at it,
      -- and the prune looks up a job's delivery; without it, both read the whole inbox for every job.
      CREATE INDEX webhook_inbox_job ON ${s}.webhook_inbox (job_id);
    `,
  },
  {
    version: 13,
    name: 'input_required status, input state',
    sql: (s) => `
      -- A job whose handler asked a question (ctx.requestInput) waits in the new status input_required
      -- (docs/jobs.md, "Asking for input"). input is its input state ({ request, answers, rounds }), NULL
      -- until it first asks; input_deadline_at repeats the open question's expiry for the sweep. The status
      -- CHECK is replaced (its name is PostgreSQL's default for migration 1's column constraint); adding it
      -- reads the table once under the migration's lock. The claim function and the triggers are untouched:
      -- they act on pending and in_progress jobs only, and an answer that puts a job back to pending is
      -- announced by jobs_available_on_update like any other.
      ALTER TABLE ${s}.jobs DROP CONSTRAINT jobs_status_check;
      ALTER TABLE ${s}.jobs ADD CONSTRAINT jobs_status_check
        CHECK (status IN ('pending', 'in_progress', 'input_required', 'completed', 'failed', 'canceled'));
      ALTER TABLE ${s}.jobs ADD COLUMN input jsonb, ADD COLUMN input_deadline_at bigint;
      -- Waiting jobs by expiry: the sweep reads the first entries; only waiting jobs cost an entry.
      CREATE INDEX jobs_input_required ON ${s}.jobs (input_deadline_at) WHERE status = 'input_required';
    `,
  },
];

/** The newest schema version this code knows. */
export const LATEST_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/**
 * Brings `schema` up to date: creates the schema when missing, then applies, in order of version, each
 * migration not yet recorded in `schema_migrations`, all in one transaction.
 *
 * Several processes starting at once would race on CREATE SCHEMA / CREATE TABLE (a unique violation on the
 * catalog) and could apply a migration twice, so the transaction first takes a transaction-scoped advisory
 * lock keyed by the schema name: the others wait, then find the work done. Different schemas (one per test
 * suite) use different keys and never wait on each other.
 *
 * @param nowMs recorded as `applied_at` (the store's clock).
 * @param migrations the steps to bring it to (tests pass others).
 * @throws Error when the database has a schema version this code does not know (a rollback of the code
 * after a migration): running on it could corrupt data.
 */
export async function migrate(
  pool: pg.Pool,
  schema: string,
  nowMs: number,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<void> {
  const s = quoteIdent(schema);
  await withTransaction(pool, async (client) => {
    // Serializes concurrent migrators of this schema until COMMIT; released automatically on ROLLBACK.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`breakwater:migrate:${schema}`]);

    // Looked up first, because CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege on the
    // database, which a deployment user may lack when an administrator created the schema for it.
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${s}`);

    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (
         version integer PRIMARY KEY,
         name text NOT NULL,
         applied_at bigint NOT NULL
       )`,
    );
    // Every applied version, not only the highest: versions are numbered by separate changes, so a schema
    // may have 10 without 9 (migrated by a build that had only 10); the missing one is applied now.
    const current = await client.query<{ version: number }>(`SELECT version FROM ${s}.schema_migrations`);
    const done = new Set(current.rows.map((row) => row.version));
    const known = new Set(migrations.map((m) => m.version));
    const unknown = [...done].filter((version) => !known.has(version)).sort((a, b) => a - b);
    if (unknown.length > 0) {
      throw new Error(
        `PostgresJobStore: schema ${schema} has version(s) ${unknown.join(', ')}, unknown to this code ` +
          `(newest ${Math.max(...known)}): it was migrated by a newer Breakwater`,
      );
    }
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql(s));
      await client.query(
        `INSERT INTO ${s}.schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
        [migration.version, migration.name, nowMs],
      );
    }
  });
}

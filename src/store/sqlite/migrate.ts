import type Database from 'better-sqlite3';
import { INPUT_REQUIRED_MIGRATION } from './migrate-input.js';

/** One step of the schema: applied once, in order, inside the opening transaction. */
export interface Migration {
  /** 1, 2, 3, …: never renumbered, never edited once released (add a new one instead). */
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** The columns of `jobs` that migration 8 copies into the rebuilt table (every column, by name). */
const REBUILT_COLUMNS = `id, type, status, payload, result, error, attempts, max_attempts, run_at, priority, idempotency_key,
  timeout_ms, lease_owner, lease_token, lease_expires_at, cancel_requested_at, created_at, updated_at,
  finished_at, next_seq, ordering_key, inbox_source`;

/**
 * The schema, oldest first. Times are INTEGER ms since the epoch, JSON values TEXT. Tables are not STRICT on
 * purpose: a `retryAt` computed with jitter may be fractional, and the store keeps times as given.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'jobs and job events',
    sql: `
CREATE TABLE jobs (
  id                  TEXT PRIMARY KEY,
  type                TEXT NOT NULL,
  status              TEXT NOT NULL
                      CHECK (status IN ('pending', 'in_progress', 'completed', 'failed', 'canceled')),
  payload             TEXT,
  result              TEXT,
  error               TEXT,
  attempts            INTEGER NOT NULL DEFAULT 0,
  max_attempts        INTEGER NOT NULL CHECK (max_attempts >= 1),
  run_at              INTEGER NOT NULL,
  priority            INTEGER NOT NULL DEFAULT 0,
  idempotency_key     TEXT,
  timeout_ms          INTEGER,
  lease_owner         TEXT,
  lease_token         INTEGER NOT NULL DEFAULT 0,
  lease_expires_at    INTEGER,
  cancel_requested_at INTEGER,
  created_at          INTEGER NOT NULL,
  updated_at          INTEGER NOT NULL,
  finished_at         INTEGER,
  -- The seq the job's next event gets: bumped in the transaction that writes the event, so seqs are
  -- gapless per job without a MAX(seq) lookup.
  next_seq            INTEGER NOT NULL DEFAULT 1
);

-- Enqueue's idempotency: the constraint, not a check-then-insert, makes concurrent enqueues of one key
-- return one job. Partial, so jobs without a key never collide.
CREATE UNIQUE INDEX jobs_idempotency ON jobs (type, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Claim: walks pending jobs already in claim order (priority DESC, run_at, id) and stops after LIMIT due
-- ones, instead of sorting every due job on each claim when the queue is backed up.
CREATE INDEX jobs_claim ON jobs (status, priority DESC, run_at, id);

-- nextRunAt and stats: the earliest run_at among pending jobs is the first entry of the range.
CREATE INDEX jobs_run_at ON jobs (status, run_at);

-- Claim's reclaim of expired leases: only running jobs are indexed, so the index stays small.
CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE status = 'in_progress';

-- list: newest first (id DESC) within a status or a type, without a sort.
CREATE INDEX jobs_status_id ON jobs (status, id);
CREATE INDEX jobs_type_id ON jobs (type, id);

CREATE TABLE job_events (
  job_id    TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  seq       INTEGER NOT NULL,
  type      TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  payload   TEXT,
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
`,
  },
  {
    version: 2,
    name: 'stream events',
    sql: `
-- One row per resumable stream. stream_key is the stream's number in event ids ('<key>-<seq>'); AUTOINCREMENT
-- so a key is never handed out again after prune deleted its stream, or an old Last-Event-ID would resolve to
-- a stranger's stream. last_seq is bumped by the append that uses it, under the write lock, so seqs are
-- gapless per stream without a MAX(seq) lookup.
CREATE TABLE streams (
  stream_key INTEGER PRIMARY KEY AUTOINCREMENT,
  stream_id  TEXT NOT NULL UNIQUE,
  last_seq   INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- Prune: streams whose last append is older than the cutoff.
CREATE INDEX streams_updated_at ON streams (updated_at);

CREATE TABLE stream_events (
  stream_key INTEGER NOT NULL REFERENCES streams (stream_key) ON DELETE CASCADE,
  seq        INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  message    TEXT NOT NULL,
  PRIMARY KEY (stream_key, seq)
) WITHOUT ROWID;

-- Prune: events older than the cutoff, oldest first, without a scan of every stream.
CREATE INDEX stream_events_created_at ON stream_events (created_at);
`,
  },
  {
    version: 3,
    name: 'partial claim indexes',
    sql: `
-- Only pending jobs are ever looked up through these two, so only pending jobs are indexed: a claim then
-- deletes one entry from each instead of moving it, and finishing a run touches neither. (Version 1 indexed
-- every status, so finished jobs piled up in both.)
DROP INDEX jobs_claim;
CREATE INDEX jobs_claim ON jobs (priority DESC, run_at, id) WHERE status = 'pending';
DROP INDEX jobs_run_at;
CREATE INDEX jobs_run_at ON jobs (run_at) WHERE status = 'pending';
`,
  },
  {
    version: 4,
    name: 'ordering keys',
    sql: `
ALTER TABLE jobs ADD COLUMN ordering_key TEXT;

-- Claim's "is a job of my key ahead of me?": one probe of the key's unfinished jobs below my id. Only
-- unfinished keyed jobs are indexed, so the index holds the backlog, not the history. status rides along so
-- the probe reads the index alone (SQLite re-checks an IN term of a partial index's WHERE on each row).
CREATE INDEX jobs_ordering ON jobs (ordering_key, id, status)
  WHERE ordering_key IS NOT NULL AND status IN ('pending', 'in_progress');

-- Claim's "is a job of my key running?" (even a later one: a dead letter retried by hand, or an id that
-- lost a race): one probe of a tiny index, instead of a walk over the key's whole backlog.
CREATE INDEX jobs_ordering_running ON jobs (ordering_key)
  WHERE ordering_key IS NOT NULL AND status = 'in_progress';
`,
  },
  {
    version: 5,
    name: 'webhook inbox',
    sql: `
-- The inbox source of a job enqueued for a delivery (acceptWebhook, replayWebhook), else NULL: the backlog
-- of a source is then a count over a partial index that holds only that source's unfinished jobs (status
-- in it too, so the count reads no table row).
ALTER TABLE jobs ADD COLUMN inbox_source TEXT;
CREATE INDEX jobs_inbox_backlog ON jobs (inbox_source, status)
  WHERE inbox_source IS NOT NULL AND status IN ('pending', 'in_progress');

-- One row per delivery, unique per (source, event_id): the constraint is the deduplication. job_id is the
-- delivery's latest job (a replay moves it). body is the raw body as received. The foreign key is checked
-- at commit: an accept inserts the delivery first (its conflict is the duplicate check) and its job after.
CREATE TABLE webhook_inbox (
  id          TEXT PRIMARY KEY,
  source      TEXT NOT NULL,
  event_id    TEXT NOT NULL,
  event_type  TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  occurred_at INTEGER,
  body        TEXT NOT NULL,
  job_id      TEXT NOT NULL REFERENCES jobs (id) DEFERRABLE INITIALLY DEFERRED,
  replays     INTEGER NOT NULL DEFAULT 0,
  UNIQUE (source, event_id)
);

-- listWebhooks of one source, newest first (ids are UUIDv7), without a sort.
CREATE INDEX webhook_inbox_source_id ON webhook_inbox (source, id);

-- The child side of the foreign key. Without it SQLite scans the whole inbox for every job it inserts while
-- the deferred constraint has pending violations (each accept), so accepts slow down as the inbox grows.
CREATE INDEX webhook_inbox_job ON webhook_inbox (job_id);
`,
  },
  {
    version: 6,
    name: 'idempotency, operations, audit',
    sql: `
-- Inbound idempotency records, one per (scope, key): the primary key is what makes begin atomic (an UPSERT
-- on it decides, never a check-then-insert). response is the stored response as JSON text. Not WITHOUT
-- ROWID: a row holds a whole response body, and prune deletes by rowid.
CREATE TABLE idempotency_records (
  scope        TEXT NOT NULL,
  key          TEXT NOT NULL,
  fingerprint  TEXT NOT NULL,
  state        TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
  token        TEXT NOT NULL,
  response     TEXT,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  locked_until INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
);

-- prune: the expired records, oldest first, without a scan.
CREATE INDEX idempotency_records_expires_at ON idempotency_records (expires_at);

-- The outbound operation ledger. version is the compare-and-set token of update; JSON values are TEXT,
-- retry_allowed 0/1.
CREATE TABLE operations (
  id                   TEXT PRIMARY KEY,
  action               TEXT NOT NULL,
  target               TEXT NOT NULL,
  key                  TEXT,
  request              TEXT NOT NULL,
  correlation_id       TEXT NOT NULL,
  retry_allowed        INTEGER NOT NULL CHECK (retry_allowed IN (0, 1)),
  reconcile            TEXT,
  state                TEXT NOT NULL
                       CHECK (state IN ('pending', 'in_flight', 'succeeded', 'failed', 'unknown', 'needs_attention')),
  attempts             INTEGER NOT NULL DEFAULT 0,
  version              INTEGER NOT NULL DEFAULT 1,
  observation          TEXT,
  result               TEXT,
  error                TEXT,
  evidence             TEXT,
  recovery_deadline_at INTEGER NOT NULL,
  next_check_at        INTEGER,
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL,
  settled_at           INTEGER
);

-- begin's key: the constraint, not a check-then-insert, makes concurrent begins of one (action, key) create
-- one operation. Partial, so operations without a key never collide.
CREATE UNIQUE INDEX operations_key ON operations (action, key) WHERE key IS NOT NULL;

-- The recovery loops' list: operations in some states whose next check is due.
CREATE INDEX operations_state_check ON operations (state, next_check_at);

-- The audit chain. seq is the rowid (gapless: assigned by append under the write lock); body is the
-- sealer's text exactly as hashed.
CREATE TABLE audit_log (
  seq       INTEGER PRIMARY KEY,
  body      TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash      TEXT NOT NULL
);
`,
  },
  {
    version: 7,
    name: 'counters and routes',
    sql: `
-- Counters (rate-limit windows, token buckets, spend budgets): one JSON state per key, changed by a step run
-- under the write lock. expires_at NULL: kept until changed; a row with expires_at <= now reads as absent.
CREATE TABLE counters (
  key        TEXT PRIMARY KEY,
  state      TEXT NOT NULL,
  expires_at INTEGER,
  updated_at INTEGER NOT NULL
);

-- prune: the expired keys, oldest first, without a scan. Partial: keys that never expire are not indexed.
CREATE INDEX counters_expires_at ON counters (expires_at) WHERE expires_at IS NOT NULL;

-- Versioned routes: immutable versions, numbered per name by create under the write lock (from latest of
-- route_heads, not a MAX(version) lookup).
CREATE TABLE route_versions (
  name       TEXT NOT NULL,
  version    INTEGER NOT NULL,
  definition TEXT NOT NULL,
  note       TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (name, version)
);

-- One row per route: the deployed version (NULL while only drafts exist), the newest one, and a revision
-- bumped by every create and deploy of the route.
CREATE TABLE route_heads (
  name        TEXT PRIMARY KEY,
  deployed    INTEGER,
  latest      INTEGER NOT NULL,
  deployed_at INTEGER,
  revision    INTEGER NOT NULL
);

-- The revision of all routes: one row, bumped in the transaction of every create and deploy, so a gateway
-- polls one row to learn whether its cached routes are stale.
CREATE TABLE route_revision (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  revision INTEGER NOT NULL
);
INSERT INTO route_revision (id, revision) VALUES (1, 0);
`,
  },
  {
    version: 8,
    name: 'jobs rebuilt: status check without IN, no index on every status',
    sql: `
-- Rebuilds jobs (SQLite cannot alter a CHECK), following SQLite's documented procedure for other schema
-- changes (https://sqlite.org/lang_altertable.html, "Making Other Kinds Of Table Schema Changes"); migrate()
-- runs it with foreign keys off and checks them before committing. Two changes, both on the hot path:
--
-- 1. The status CHECK was "status IN (five values)": SQLite evaluates an IN list of more than two constants
--    through an ephemeral index built (a pager, a cache, five inserts) and torn down on every statement that
--    writes status: each enqueue, lease and completion. The same rule as an OR of equalities costs a few
--    comparisons (docs/performance.md#sqlite-store).
-- 2. jobs_status_id (status, id) was moved three times in every job's life (five index writes) for one rare
--    read, list by status (docs/performance.md#sqlite-store). Only the statuses that are rare
--    and asked for by status (dead letters and canceled jobs) keep an index; pending and completed jobs are
--    the bulk of recent ids, so their list walks the primary key newest first, and running jobs are read
--    through jobs_lease (no more of them than the workers' slots).
CREATE TABLE jobs_rebuilt (
  id                  TEXT PRIMARY KEY,
  type                TEXT NOT NULL,
  status              TEXT NOT NULL
                      CHECK (status = 'pending' OR status = 'in_progress' OR status = 'completed'
                             OR status = 'failed' OR status = 'canceled'),
  payload             TEXT,
  result              TEXT,
  error               TEXT,
  attempts            INTEGER NOT NULL DEFAULT 0,
  max_attempts        INTEGER NOT NULL CHECK (max_attempts >= 1),
  run_at              INTEGER NOT NULL,
  priority            INTEGER NOT NULL DEFAULT 0,
  idempotency_key     TEXT,
  timeout_ms          INTEGER,
  lease_owner         TEXT,
  lease_token         INTEGER NOT NULL DEFAULT 0,
  lease_expires_at    INTEGER,
  cancel_requested_at INTEGER,
  created_at          INTEGER NOT NULL,
  updated_at          INTEGER NOT NULL,
  finished_at         INTEGER,
  next_seq            INTEGER NOT NULL DEFAULT 1,
  ordering_key        TEXT,
  inbox_source        TEXT
);
INSERT INTO jobs_rebuilt (rowid, ${REBUILT_COLUMNS})
  SELECT rowid, ${REBUILT_COLUMNS} FROM jobs ORDER BY rowid;
DROP TABLE jobs;
ALTER TABLE jobs_rebuilt RENAME TO jobs;

-- Every index of versions 1-5 but jobs_status_id, as they were.
CREATE UNIQUE INDEX jobs_idempotency ON jobs (type, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_claim ON jobs (priority DESC, run_at, id) WHERE status = 'pending';
CREATE INDEX jobs_run_at ON jobs (run_at) WHERE status = 'pending';
CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE status = 'in_progress';
CREATE INDEX jobs_type_id ON jobs (type, id);
CREATE INDEX jobs_ordering ON jobs (ordering_key, id, status)
  WHERE ordering_key IS NOT NULL AND status IN ('pending', 'in_progress');
CREATE INDEX jobs_ordering_running ON jobs (ordering_key)
  WHERE ordering_key IS NOT NULL AND status = 'in_progress';
CREATE INDEX jobs_inbox_backlog ON jobs (inbox_source, status)
  WHERE inbox_source IS NOT NULL AND status IN ('pending', 'in_progress');
CREATE INDEX jobs_failed_canceled ON jobs (status, id) WHERE status IN ('failed', 'canceled');
`,
  },
  {
    version: 9,
    name: 'owners of jobs and operations',
    sql: `
-- The principal that started a job or an operation (docs/architecture.md#identity-and-ownership), NULL for
-- rows made before owners were kept and by the gateway itself (only admin sees those). ADD COLUMN without a
-- default rewrites nothing.
ALTER TABLE jobs ADD COLUMN owner TEXT;
ALTER TABLE operations ADD COLUMN owner TEXT;

-- "My jobs" (GET /jobs of a non-admin, an MCP client's tasks/list) and "my operations": the owner's rows
-- newest first, keyset-paginated by id, without reading anyone else's. Partial: ownerless rows (system work,
-- rows from before this version) cost no entry, and a query on owner = ? implies owner IS NOT NULL.
CREATE INDEX jobs_owner_id ON jobs (owner, id) WHERE owner IS NOT NULL;
CREATE INDEX operations_owner_id ON operations (owner, id) WHERE owner IS NOT NULL;
`,
  },
  {
    version: 10,
    name: 'api keys and admin sessions',
    sql: `
-- API keys (docs/security.md#api-keys): the secret's SHA-256, never the secret. scopes, metadata and ai are
-- JSON text; trusted_backend 0/1. Looked up by id (the key carries it), so one primary-key probe per
-- verification.
CREATE TABLE api_keys (
  id              TEXT PRIMARY KEY,
  name            TEXT NOT NULL,
  hash            TEXT NOT NULL,
  scopes          TEXT NOT NULL,
  metadata        TEXT NOT NULL,
  trusted_backend INTEGER NOT NULL CHECK (trusted_backend = 0 OR trusted_backend = 1),
  ai              TEXT,
  created_at      INTEGER NOT NULL,
  expires_at      INTEGER,
  revoked_at      INTEGER
);

-- list: newest first, and the page after a key, without a sort.
CREATE INDEX api_keys_created ON api_keys (created_at, id);

-- countActive and create's bound: only keys not revoked are indexed, by expiry.
CREATE INDEX api_keys_unrevoked ON api_keys (expires_at) WHERE revoked_at IS NULL;

-- Server-side admin sessions: the session id's hash, never the id.
CREATE TABLE admin_sessions (
  id_hash        TEXT PRIMARY KEY,
  principal_id   TEXT NOT NULL,
  client_address TEXT,
  created_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL,
  revoked_at     INTEGER
) WITHOUT ROWID;

-- revokeAll and create's bound per principal: the principal's unrevoked sessions, oldest first.
CREATE INDEX admin_sessions_principal ON admin_sessions (principal_id, created_at)
  WHERE revoked_at IS NULL;

-- prune: the expired sessions, oldest first, without a scan.
CREATE INDEX admin_sessions_expires_at ON admin_sessions (expires_at);
`,
  },
  {
    version: 11,
    name: 'retention: finished jobs and settled operations by age',
    sql: `
-- store.retention.prune walks finished jobs of one status oldest first, and settled operations oldest first
-- (retention.ts). finished_at is set when a job ends and cleared when a dead letter is retried, so only
-- finished jobs are indexed: the queue's hot rows cost no entry, and a finishing job one insert. settled_at
-- is set once, when an operation settles, and never changes after.
CREATE INDEX jobs_finished ON jobs (status, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX operations_settled ON operations (settled_at) WHERE settled_at IS NOT NULL;
`,
  },
  INPUT_REQUIRED_MIGRATION,
];

/**
 * Brings the schema up to date: creates `schema_migrations` if needed and applies, in order, each migration
 * it does not list, recording it there. Runs in one `BEGIN IMMEDIATE` transaction, so a failing migration
 * leaves nothing behind and two processes opening the same file at once apply each migration once (the
 * second waits for the first, then finds nothing to do). A second open applies nothing.
 *
 * Foreign keys are off while migrations run (the pragma only takes effect outside a transaction) and
 * restored after: a table rebuild (migration 8) drops a table others reference, which with them on would
 * cascade into deleting the referencing rows. `PRAGMA foreign_key_check` runs before the commit instead, and
 * a violation rolls every migration of this open back.
 * @returns the versions applied now (empty when the schema was current).
 * @throws Error when the file was migrated by a newer Breakwater (a version this one does not know), or a
 *   migration left a foreign key violated.
 */
export function migrate(
  db: Database.Database,
  nowMs: number,
  migrations: readonly Migration[] = MIGRATIONS,
): number[] {
  const apply = db.transaction((): number[] => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    INTEGER PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at INTEGER NOT NULL
    )`);
    const done = new Set(
      db
        .prepare<[], { version: number }>('SELECT version FROM schema_migrations')
        .all()
        .map((row) => row.version),
    );
    const known = new Set(migrations.map((m) => m.version));
    const unknown = [...done].filter((version) => !known.has(version));
    if (unknown.length > 0) {
      throw new Error(
        `SQLite job store: the database has schema version(s) ${unknown.join(', ')}, unknown to this version ` +
          'of Breakwater (it was opened by a newer one)',
      );
    }
    const record = db.prepare<[number, string, number]>(
      'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
    );
    const applied: number[] = [];
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(migration.version)) continue;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, nowMs);
      applied.push(migration.version);
    }
    // Only after a change: the check reads every referencing row (each job event), once per upgrade.
    const violation = applied.length > 0 ? db.prepare('PRAGMA foreign_key_check').get() : undefined;
    if (violation !== undefined) {
      throw new Error(`SQLite job store: a migration broke a foreign key: ${JSON.stringify(violation)}`);
    }
    return applied;
  });
  const foreignKeys = db.pragma('foreign_keys', { simple: true }) as number;
  db.pragma('foreign_keys = OFF');
  try {
    return apply.immediate();
  } finally {
    db.pragma(`foreign_keys = ${foreignKeys ? 'ON' : 'OFF'}`);
  }
}

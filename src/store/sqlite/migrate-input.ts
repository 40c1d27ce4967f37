/**
 * Migration 12 of the SQLite schema (see `migrate.ts`, which lists it after the others): kept in its own file
 * so that file stays readable. Never edited once released; a later change is a new migration.
 */

/** Every column of `jobs` as of migration 11, copied by name into the rebuilt table. */
const COLUMNS_11 = `id, type, status, payload, result, error, attempts, max_attempts, run_at, priority, idempotency_key,
  timeout_ms, lease_owner, lease_token, lease_expires_at, cancel_requested_at, created_at, updated_at,
  finished_at, next_seq, ordering_key, inbox_source, owner`;

export const INPUT_REQUIRED_MIGRATION = {
  version: 12,
  name: 'jobs rebuilt: input_required status, input state',
  sql: `
-- A job whose handler asked a question (ctx.requestInput) waits in the new status input_required (docs/jobs.md,
-- "Asking for input"). The status CHECK cannot be altered in SQLite, so jobs is rebuilt as migration 8 did
-- (https://sqlite.org/lang_altertable.html, "Making Other Kinds Of Table Schema Changes"; migrate() runs it
-- with foreign keys off and checks them before committing), with two new columns:
-- - input: the job's input state as JSON ({ request, answers, rounds }), NULL until it first asks;
-- - input_deadline_at: the open question's expiry, NULL when it has none (or none is open).
CREATE TABLE jobs_rebuilt (
  id                  TEXT PRIMARY KEY,
  type                TEXT NOT NULL,
  status              TEXT NOT NULL
                      CHECK (status = 'pending' OR status = 'in_progress' OR status = 'completed'
                             OR status = 'failed' OR status = 'canceled' OR status = 'input_required'),
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
  inbox_source        TEXT,
  owner               TEXT,
  input               TEXT,
  input_deadline_at   INTEGER
);
INSERT INTO jobs_rebuilt (rowid, ${COLUMNS_11})
  SELECT rowid, ${COLUMNS_11} FROM jobs ORDER BY rowid;
DROP TABLE jobs;
ALTER TABLE jobs_rebuilt RENAME TO jobs;

-- Every index of versions 1-11, as they were.
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
CREATE INDEX jobs_owner_id ON jobs (owner, id) WHERE owner IS NOT NULL;
CREATE INDEX jobs_finished ON jobs (status, finished_at) WHERE finished_at IS NOT NULL;

-- Jobs waiting for input, by their question's expiry: the expiry sweep reads the first entries, stats counts
-- the status, and only waiting jobs cost an entry.
CREATE INDEX jobs_input_required ON jobs (input_deadline_at) WHERE status = 'input_required';
`,
} as const;

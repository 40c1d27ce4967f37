import { newId } from '../../core/index.js';
import {
  isStoreKey,
  matchesNothing,
  prepareFilter,
  prepareOperation,
  preparePatch,
  type PreparedOperation,
} from '../checks.js';
import type {
  NewOperation,
  OperationFilter,
  OperationPatch,
  OperationRecord,
  OperationState,
  OperationStore,
  ReconcileHint,
} from '../operations.js';
import { ms } from './db.js';
import type { PgRunner } from './runner.js';

/** An `operations` row (`SELECT *`): BIGINT already a number, json parsed. */
interface OperationRow {
  id: string;
  action: string;
  target: string;
  key: string | null;
  request: unknown;
  correlation_id: string;
  retry_allowed: boolean;
  reconcile: ReconcileHint | null;
  state: OperationState;
  attempts: number;
  version: number;
  observation: string | null;
  result: unknown;
  error: unknown;
  evidence: unknown;
  recovery_deadline_at: number;
  next_check_at: number | null;
  created_at: number;
  updated_at: number;
  settled_at: number | null;
  owner: string | null;
}

function toRecord(row: OperationRow): OperationRecord {
  return {
    id: row.id,
    action: row.action,
    target: row.target,
    key: row.key,
    request: row.request,
    correlationId: row.correlation_id,
    retryAllowed: row.retry_allowed,
    reconcile: row.reconcile,
    state: row.state,
    attempts: row.attempts,
    version: row.version,
    observation: row.observation,
    result: row.result,
    error: row.error,
    evidence: row.evidence,
    recoveryDeadlineAt: row.recovery_deadline_at,
    nextCheckAt: row.next_check_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    settledAt: row.settled_at,
    owner: row.owner,
  };
}

/**
 * `store.operations` on PostgreSQL. Every method is one statement (a `begin` that loses its key's race adds
 * a read); the constraints and the UPDATE's WHERE clause decide, never a check-then-write.
 */
export class PostgresOperationStore implements OperationStore {
  private readonly operations: string;

  constructor(private readonly runner: PgRunner) {
    this.operations = runner.table('operations');
  }

  /**
   * INSERT … ON CONFLICT (action, key) DO NOTHING lets the partial unique index decide among any number of
   * concurrent begins of one key (the losers wait for the winner's commit, then insert nothing); a loser then
   * reads the winner's row in a second statement (the first one's snapshot cannot see it).
   */
  begin(operation: NewOperation): Promise<{ record: OperationRecord; created: boolean }> {
    return this.runner.run(async () => {
      const op: PreparedOperation = prepareOperation(operation, newId('op'));
      const now = ms(this.runner.clock.now());
      const inserted = await this.runner.pool.query<OperationRow>(
        `INSERT INTO ${this.operations} (id, action, target, key, request, correlation_id, retry_allowed,
                                         reconcile, state, recovery_deadline_at, next_check_at, created_at,
                                         updated_at, owner)
         VALUES ($1, $2, $3, $4, $5::json, $6, $7, $8::json, 'pending', $9, $9, $10, $10, $11)
         ON CONFLICT DO NOTHING
         RETURNING *`,
        [
          op.id,
          op.action,
          op.target,
          op.key,
          op.request,
          op.correlationId,
          op.retryAllowed,
          op.reconcile,
          ms(op.recoveryDeadlineAt),
          now,
          op.owner,
        ],
      );
      const row = inserted.rows[0];
      if (row !== undefined) return { record: toRecord(row), created: true };
      // Nothing inserted: the id (primary key) or the (action, key) index refused the row. The id wins.
      const found = await this.runner.pool.query<OperationRow>(
        `(SELECT * FROM ${this.operations} WHERE id = $1)
         UNION ALL
         (SELECT * FROM ${this.operations} WHERE action = $2 AND key = $3)
         LIMIT 1`,
        [op.id, op.action, op.key],
      );
      const existing = found.rows[0];
      if (existing === undefined) {
        throw new Error(`PostgresJobStore: operation ${op.id} conflicted but cannot be found`);
      }
      return { record: toRecord(existing), created: false };
    });
  }

  get(id: string): Promise<OperationRecord | undefined> {
    return this.runner.run(async () => {
      if (!isStoreKey(id)) return undefined;
      const result = await this.runner.pool.query<OperationRow>(
        `SELECT * FROM ${this.operations} WHERE id = $1`,
        [id],
      );
      const row = result.rows[0];
      return row === undefined ? undefined : toRecord(row);
    });
  }

  /**
   * One compare-and-set UPDATE: the WHERE clause (this version, not settled) is the whole decision. Of two
   * concurrent updates with one expected version, the second waits for the first's row lock, re-checks the
   * WHERE against the row the first committed (its version moved on) and changes nothing. Each nullable field
   * is written only when its flag is on; `settled_at` is set when the new state is settled.
   */
  update(id: string, expectedVersion: number, patch: OperationPatch): Promise<OperationRecord | undefined> {
    return this.runner.run(async () => {
      const p = preparePatch(expectedVersion, patch);
      if (!isStoreKey(id)) return undefined;
      const result = await this.runner.pool.query<OperationRow>(
        `UPDATE ${this.operations} SET
           state = COALESCE($3::text, state),
           attempts = COALESCE($4::integer, attempts),
           observation = CASE WHEN $5::boolean THEN $6::text ELSE observation END,
           result = CASE WHEN $7::boolean THEN $8::json ELSE result END,
           error = CASE WHEN $9::boolean THEN $10::json ELSE error END,
           evidence = CASE WHEN $11::boolean THEN $12::json ELSE evidence END,
           next_check_at = CASE WHEN $13::boolean THEN $14::bigint ELSE next_check_at END,
           version = version + 1,
           updated_at = $15::bigint,
           settled_at = CASE WHEN COALESCE($3::text, state) IN ('succeeded', 'failed') THEN $15::bigint ELSE NULL END
         WHERE id = $1 AND version = $2 AND state NOT IN ('succeeded', 'failed')
         RETURNING *`,
        [
          id,
          expectedVersion,
          p.state,
          p.attempts,
          p.setObservation,
          p.observation,
          p.setResult,
          p.result,
          p.setError,
          p.error,
          p.setEvidence,
          p.evidence,
          p.setNextCheckAt,
          p.nextCheckAt === null ? null : ms(p.nextCheckAt),
          ms(this.runner.clock.now()),
        ],
      );
      const row = result.rows[0];
      return row === undefined ? undefined : toRecord(row);
    });
  }

  /** Newest first (id DESC in the C collation: UUIDv7 order), keyset-paginated by `beforeId`. */
  list(filter?: OperationFilter): Promise<OperationRecord[]> {
    return this.runner.run(async () => {
      const f = prepareFilter(filter);
      if (matchesNothing(f)) return [];
      const values: unknown[] = [];
      const where: string[] = [];
      const param = (value: unknown): string => {
        values.push(value);
        return `$${values.length}`;
      };
      if (f.states !== undefined) where.push(`state = ANY(${param(f.states)}::text[])`);
      if (f.action !== undefined) where.push(`action = ${param(f.action)}`);
      if (f.dueBy !== undefined) where.push(`next_check_at <= ${param(Math.floor(f.dueBy))}`);
      if (f.owner !== undefined) where.push(`owner = ${param(f.owner)}`);
      if (f.beforeId !== undefined) where.push(`id < ${param(f.beforeId)}`);
      const result = await this.runner.pool.query<OperationRow>(
        `SELECT * FROM ${this.operations}
         ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY id DESC
         LIMIT ${param(f.limit)}`,
        values,
      );
      return result.rows.map(toRecord);
    });
  }
}

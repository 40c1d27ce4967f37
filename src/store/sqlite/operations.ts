import type Database from 'better-sqlite3';
import { newId } from '../../core/index.js';
import {
  isStoreKey,
  matchesNothing,
  prepareFilter,
  prepareOperation,
  preparePatch,
  type PreparedOperation,
  type PreparedPatch,
} from '../checks.js';
import type {
  NewOperation,
  OperationFilter,
  OperationPatch,
  OperationRecord,
  OperationStore,
  ReconcileHint,
} from '../operations.js';
import type { SqliteContext } from './context.js';
import { fromJson } from './rows.js';
import type { SqliteRunner } from './runner.js';

/** The `operations` columns under {@link OperationRecord}'s names; JSON still text, `retryAllowed` 0/1. */
const OPERATION_COLUMNS = `id, action, target, key, request, correlation_id AS correlationId,
  retry_allowed AS retryAllowed, reconcile, state, attempts, version, observation, result, error, evidence,
  recovery_deadline_at AS recoveryDeadlineAt, next_check_at AS nextCheckAt, created_at AS createdAt,
  updated_at AS updatedAt, settled_at AS settledAt, owner`;

type OperationRow = Omit<
  OperationRecord,
  'request' | 'retryAllowed' | 'reconcile' | 'result' | 'error' | 'evidence'
> & {
  request: string;
  retryAllowed: number;
  reconcile: string | null;
  result: string | null;
  error: string | null;
  evidence: string | null;
};

function toRecord(row: OperationRow): OperationRecord {
  return {
    ...row,
    request: fromJson(row.request),
    retryAllowed: row.retryAllowed === 1,
    reconcile: fromJson(row.reconcile) as ReconcileHint | null,
    result: fromJson(row.result),
    error: fromJson(row.error),
    evidence: fromJson(row.evidence),
  };
}

/**
 * Prepares `OperationStore.begin`: insert first, then read back, in one `BEGIN IMMEDIATE` transaction.
 * `ON CONFLICT (action, key) DO NOTHING` on the partial unique index lets the constraint decide which of any
 * number of begins of one key creates the operation; the others read the winner's row (an operation without
 * a key never conflicts).
 */
export function prepareBegin(
  ctx: SqliteContext,
): (op: PreparedOperation) => { record: OperationRecord; created: boolean } {
  const insert = ctx.db.prepare<[PreparedOperation & { retry: number; now: number }], OperationRow>(
    `INSERT INTO operations (id, action, target, key, request, correlation_id, retry_allowed, reconcile, state,
                             recovery_deadline_at, next_check_at, created_at, updated_at, owner)
     VALUES (@id, @action, @target, @key, @request, @correlationId, @retry, @reconcile, 'pending',
             @recoveryDeadlineAt, @recoveryDeadlineAt, @now, @now, @owner)
     ON CONFLICT DO NOTHING
     RETURNING ${OPERATION_COLUMNS}`,
  );
  // Nothing inserted: the id (primary key) or the (action, key) index refused the row. The id wins.
  const existing = ctx.db.prepare<[string, string, string | null], OperationRow>(
    `SELECT ${OPERATION_COLUMNS} FROM operations WHERE id = ?
     UNION ALL
     SELECT ${OPERATION_COLUMNS} FROM operations WHERE action = ? AND key = ?
     LIMIT 1`,
  );
  return ctx.db.transaction((op: PreparedOperation) => {
    const row = insert.get({ ...op, retry: op.retryAllowed ? 1 : 0, now: ctx.clock.now() });
    if (row !== undefined) return { record: toRecord(row), created: true };
    return { record: toRecord(existing.get(op.id, op.action, op.key)!), created: false };
  }).immediate;
}

/** Prepares `get`: one primary-key lookup. */
export function prepareGet(ctx: SqliteContext): (id: string) => OperationRecord | undefined {
  const select = ctx.db.prepare<[string], OperationRow>(
    `SELECT ${OPERATION_COLUMNS} FROM operations WHERE id = ?`,
  );
  return (id) => {
    const row = select.get(id);
    return row === undefined ? undefined : toRecord(row);
  };
}

/**
 * Prepares `update`: one compare-and-set UPDATE. The WHERE clause is the whole decision (this version, not
 * settled), so of two updates with one expected version exactly one changes the row; the loser's finds the
 * version moved on and changes nothing. Each nullable field is written only when its `set_*` flag is on;
 * `settled_at` is set when the new state is settled (it was null: a settled row never matches).
 */
export function prepareUpdate(
  ctx: SqliteContext,
): (id: string, expectedVersion: number, patch: PreparedPatch) => OperationRecord | undefined {
  const update = ctx.db.prepare<[Record<string, string | number | null>], OperationRow>(
    `UPDATE operations SET
       state = COALESCE(@state, state),
       attempts = COALESCE(@attempts, attempts),
       observation = CASE WHEN @setObservation THEN @observation ELSE observation END,
       result = CASE WHEN @setResult THEN @result ELSE result END,
       error = CASE WHEN @setError THEN @error ELSE error END,
       evidence = CASE WHEN @setEvidence THEN @evidence ELSE evidence END,
       next_check_at = CASE WHEN @setNextCheckAt THEN @nextCheckAt ELSE next_check_at END,
       version = version + 1,
       updated_at = @now,
       settled_at = CASE WHEN COALESCE(@state, state) IN ('succeeded', 'failed') THEN @now ELSE NULL END
     WHERE id = @id AND version = @expectedVersion AND state NOT IN ('succeeded', 'failed')
     RETURNING ${OPERATION_COLUMNS}`,
  );
  return (id, expectedVersion, patch) => {
    const row = update.get({
      ...patch,
      setObservation: patch.setObservation ? 1 : 0,
      setResult: patch.setResult ? 1 : 0,
      setError: patch.setError ? 1 : 0,
      setEvidence: patch.setEvidence ? 1 : 0,
      setNextCheckAt: patch.setNextCheckAt ? 1 : 0,
      id,
      expectedVersion,
      now: ctx.clock.now(),
    });
    return row === undefined ? undefined : toRecord(row);
  };
}

/**
 * Prepares `list`: newest first (id DESC), keyset-paginated by `beforeId`. One statement per filter shape,
 * each prepared once. With an `owner`, the `operations_owner_id (owner, id)` index walks that owner's
 * operations newest first.
 */
export function prepareList(ctx: SqliteContext): (filter?: OperationFilter) => OperationRecord[] {
  const statements = new Map<string, Database.Statement<(string | number)[], OperationRow>>();
  return (raw) => {
    const filter = prepareFilter(raw);
    if (matchesNothing(filter)) return [];
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (filter.states !== undefined) {
      where.push(`state IN (${filter.states.map(() => '?').join(', ')})`);
      params.push(...filter.states);
    }
    if (filter.action !== undefined) {
      where.push('action = ?');
      params.push(filter.action);
    }
    if (filter.dueBy !== undefined) {
      where.push('next_check_at <= ?');
      params.push(filter.dueBy);
    }
    if (filter.owner !== undefined) {
      where.push('owner = ?');
      params.push(filter.owner);
    }
    if (filter.beforeId !== undefined) {
      where.push('id < ?');
      params.push(filter.beforeId);
    }
    params.push(filter.limit);
    const sql = `SELECT ${OPERATION_COLUMNS} FROM operations
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY id DESC
      LIMIT ?`;
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = ctx.db.prepare<(string | number)[], OperationRow>(sql);
      statements.set(sql, statement);
    }
    return statement.all(...params).map(toRecord);
  };
}

/**
 * `store.operations` on SQLite. Not group-committed: an operation is begun and updated a few times per
 * outbound side-effecting call (far rarer than idempotency records or job writes), and each write must be
 * durable before the call it guards goes out. Each runs alone, after the queued group-commit work.
 */
export class SqliteOperationStore implements OperationStore {
  private readonly beginTx: (op: PreparedOperation) => { record: OperationRecord; created: boolean };
  private readonly getStmt: (id: string) => OperationRecord | undefined;
  private readonly updateStmt: (
    id: string,
    expectedVersion: number,
    patch: PreparedPatch,
  ) => OperationRecord | undefined;
  private readonly listStmt: (filter?: OperationFilter) => OperationRecord[];

  constructor(private readonly runner: SqliteRunner) {
    const { ctx } = runner;
    this.beginTx = prepareBegin(ctx);
    this.getStmt = prepareGet(ctx);
    this.updateStmt = prepareUpdate(ctx);
    this.listStmt = prepareList(ctx);
  }

  begin(operation: NewOperation): Promise<{ record: OperationRecord; created: boolean }> {
    return this.runner.write(() => this.beginTx(prepareOperation(operation, newId('op'))));
  }

  get(id: string): Promise<OperationRecord | undefined> {
    if (!isStoreKey(id)) return this.runner.read(() => undefined);
    return this.runner.read(this.getStmt, id);
  }

  update(id: string, expectedVersion: number, patch: OperationPatch): Promise<OperationRecord | undefined> {
    return this.runner.write(() => {
      const prepared = preparePatch(expectedVersion, patch);
      return isStoreKey(id) ? this.updateStmt(id, expectedVersion, prepared) : undefined;
    });
  }

  list(filter?: OperationFilter): Promise<OperationRecord[]> {
    return this.runner.read(this.listStmt, filter);
  }
}

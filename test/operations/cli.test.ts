/** `breakwater ops list|show|reconcile` and `breakwater audit verify|tail` against a real SQLite file. */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runAuditCommand } from '../../src/cli/audit-command.js';
import { CliError } from '../../src/cli/context.js';
import { runOpsCommand } from '../../src/cli/ops-command.js';
import { BreakwaterError } from '../../src/entries/index.js';
import { OperationLedger, createAuditLog, type OperationAction } from '../../src/entries/operations.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { tempDb, useCleanups } from '../support/cleanups.js';

const defer = useCleanups();

async function run(command: typeof runOpsCommand, argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await command(argv, (line) => lines.push(line));
  return { code, out: lines.join('\n') };
}

/** An action whose service holds the order the first attempt's lost answer was about. */
function shopAction(placed: Set<string>): OperationAction<{ sku: string }, { order: string }> {
  return {
    name: 'shop.create_order',
    target: 'POST shop /orders',
    retryAllowed: false,
    reconcile: (id) => ({ method: 'GET', path: `/orders?key=${id}` }),
    send: async ({ operationId }) => {
      placed.add(operationId);
      throw new BreakwaterError('outcome_unknown', { outcome: 'unknown', details: { reason: 'ECONNRESET' } });
    },
    lookup: async ({ operationId }) =>
      placed.has(operationId) ? { state: 'in_progress' } : { state: 'not_found' },
  };
}

describe('breakwater ops', () => {
  it('list filters by state; show prints the evidence; an unknown id fails with exit 1', async () => {
    const db = tempDb(defer);
    const store = await openSqliteStore({ path: db });
    const ledger = new OperationLedger({ store: store.operations });
    const placed = new Set<string>();
    const result = await ledger.execute(shopAction(placed), { sku: 'kite' });
    await store.close();
    expect(result.outcome).toBe('unknown');

    const list = await run(runOpsCommand, ['list', '--db', db, '--state', 'unknown']);
    expect(list.code).toBe(0);
    expect(list.out.split('\n')[0]).toMatch(/^ID\s+ACTION\s+STATE\s+ATTEMPTS\s+CREATED\s+OBSERVATION$/);
    expect(list.out).toContain(`${result.operation_id}  shop.create_order  unknown  1`);
    expect((await run(runOpsCommand, ['list', '--db', db, '--state', 'succeeded'])).out).toBe(
      'no operations',
    );
    const json = JSON.parse((await run(runOpsCommand, ['list', '--db', db, '--json'])).out) as unknown[];
    expect(json).toHaveLength(1);

    const show = await run(runOpsCommand, ['show', result.operation_id, '--db', db]);
    expect(show.out).toContain('state:          unknown');
    expect(show.out).toContain(`lookup:         GET /orders?key=${result.operation_id}`);
    expect(show.out).toContain('"last_lookup":"in_progress"');

    await expect(run(runOpsCommand, ['show', 'op_nope', '--db', db])).rejects.toEqual(
      new CliError('there is no operation op_nope'),
    );
    await expect(run(runOpsCommand, ['list', '--db', db, '--state', 'lost'])).rejects.toMatchObject({
      exitCode: 2,
    });
  });

  it('reconcile asks the running ledger (its recovery loop) to look the operation up, and waits for it', async () => {
    const db = tempDb(defer);
    const store = await openSqliteStore({ path: db, watchMs: 0 });
    defer(() => store.close());
    const placed = new Set<string>();
    const action = shopAction(placed);
    const ledger = new OperationLedger({ store: store.operations, actions: [action], checkEveryMs: 100 });
    const result = await ledger.execute(action, { sku: 'kite' });
    // The lost request never reached the shop after all: the next lookup finds nothing, and past the
    // recovery deadline that settles it failed.
    placed.clear();
    const loop = ledger.startRecovery(50);
    defer(() => loop.dispose());
    const stuck = await store.operations.get(result.operation_id);
    await store.operations.update(stuck!.id, stuck!.version, { state: 'needs_attention', nextCheckAt: null });

    const answer = await run(runOpsCommand, [
      'reconcile',
      result.operation_id,
      '--db',
      db,
      '--wait',
      '10000',
    ]);
    expect(answer.code).toBe(0);
    expect(answer.out.split('\n')[0]).toBe(`operation ${result.operation_id} is failed after the lookup`);
    const settled = await store.operations.get(result.operation_id);
    expect([settled?.state, (settled?.error as { code: string }).code]).toEqual(['failed', 'not_accepted']);
    // The admin's request is in the audit log, with who asked.
    const [record] = await store.audit.read();
    expect(JSON.parse(record!.body)).toMatchObject({
      seq: 1,
      actor: expect.stringMatching(/^cli:/),
      action: 'admin.operation_reconcile',
      target: 'POST shop /orders',
      operation_id: result.operation_id,
      data: { state: 'needs_attention' },
    });
  });

  it('reconcile with nobody running the action says so and exits 1', async () => {
    const db = tempDb(defer);
    const store = await openSqliteStore({ path: db });
    const ledger = new OperationLedger({ store: store.operations });
    const result = await ledger.execute(shopAction(new Set()), { sku: 'kite' });
    await store.close();
    const answer = await run(runOpsCommand, ['reconcile', result.operation_id, '--db', db, '--wait', '300']);
    expect(answer).toEqual({
      code: 1,
      out: `operation ${result.operation_id} is still unknown: no running gateway or worker looked it up within 300 ms (one must run with the app that defines shop.create_order)`,
    });
  });
});

describe('breakwater audit', () => {
  it('an admin action from the CLI keeps a keyed chain verifiable with BREAKWATER_AUDIT_KEY', async () => {
    const key = 'k'.repeat(32);
    const db = tempDb(defer);
    const store = await openSqliteStore({ path: db });
    const audit = createAuditLog({ store: store.audit, hmacKey: key });
    await audit.record({ actor: 'gateway', action: 'operation.begin', target: 'POST shop /orders' });
    const ledger = new OperationLedger({ store: store.operations });
    const result = await ledger.execute(shopAction(new Set()), { sku: 'kite' });
    await store.close();
    process.env.BREAKWATER_AUDIT_KEY = key;
    defer(() => delete process.env.BREAKWATER_AUDIT_KEY);
    await run(runOpsCommand, ['reconcile', result.operation_id, '--db', db, '--wait', '0']);
    const lines: string[] = [];
    const code = await runAuditCommand(['verify', '--db', db], (line) => lines.push(line), {
      BREAKWATER_AUDIT_KEY: key,
    });
    expect([code, lines[0]]).toEqual([0, expect.stringMatching(/^audit chain verified: 2 records, head 2 /)]);
    // Without the key the same chain does not verify: it is keyed.
    expect(await runAuditCommand(['verify', '--db', db], () => undefined, {})).toBe(1);
  });

  it('verify prints the head of a sound chain, and names the record whose byte was edited', async () => {
    const db = tempDb(defer);
    const store = await openSqliteStore({ path: db });
    const audit = createAuditLog({ store: store.audit });
    for (let i = 0; i < 5; i++) {
      await audit.record({ actor: 'admin', action: 'job.retried', target: `job_${i}`, data: { n: i } });
    }
    await store.close();

    const good = await run(runAuditCommand, ['verify', '--db', db]);
    expect(good.code).toBe(0);
    expect(good.out).toMatch(/^audit chain verified: 5 records, head 5 [0-9a-f]{64}$/);
    const tail = await run(runAuditCommand, ['tail', '--db', db, '--limit', '2']);
    expect(tail.out.split('\n').map((line) => (JSON.parse(line) as { seq: number }).seq)).toEqual([4, 5]);

    const raw = new Database(db);
    raw.prepare("UPDATE audit_log SET body = replace(body, 'job_3', 'job_8') WHERE seq = 4").run();
    raw.close();
    const bad = await run(runAuditCommand, ['verify', '--db', db]);
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/^audit chain BROKEN at record 4: .+ \(3 records before it verified\)$/);
  });
});

/**
 * `breakwater prune [--dry-run]` against a real SQLite file holding state made 40 days ago (the command reads
 * the system clock): the counts it prints, what it leaves, and the audit log still verifying after it.
 */
import { describe, expect, it } from 'vitest';
import { runAuditCommand } from '../../src/cli/audit-command.js';
import { CliError } from '../../src/cli/context.js';
import { runPruneCommand } from '../../src/cli/prune-command.js';
import { FakeClock } from '../../src/core/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { tempDb, useCleanups } from '../support/cleanups.js';
import { SEEDED_REMOVED, seedFinishedState, type Seeded } from './support.js';

const defer = useCleanups();
const DAY_MS = 86_400_000;

async function seeded(): Promise<{ db: string; kept: Seeded }> {
  const db = tempDb(defer, 'breakwater-prune-cli');
  const clock = new FakeClock(Date.now() - 40 * DAY_MS);
  const store = await openSqliteStore({ path: db, clock });
  try {
    return { db, kept: await seedFinishedState(store, clock) };
  } finally {
    await store.close();
  }
}

async function run(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
  command = runPruneCommand,
): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await command(argv, (line) => lines.push(line), env);
  return { code, out: lines.join('\n') };
}

const ISO = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';

describe('breakwater prune', () => {
  it('--dry-run prints what would go and removes nothing; then prune removes exactly that', async () => {
    const { db } = await seeded();
    const dry = await run(['--dry-run', '--db', db]);
    expect(dry.code).toBe(0);
    const body = [
      '  jobs                 4',
      '  job events           7',
      '  webhook deliveries   1',
      '  stream events        3',
      '  idempotency records  1',
      '  operations           1',
    ];
    expect(dry.out).toMatch(new RegExp(`^dry run at ${ISO}: would remove \\(nothing removed\\)\\n`));
    expect(dry.out.split('\n').slice(1)).toEqual(body);
    // Nothing went: a second dry run counts the same.
    expect((await run(['--dry-run', '--db', db])).out.split('\n').slice(1)).toEqual(body);

    const pruned = await run(['--db', db, '--batch-size', '2']);
    expect(pruned.code).toBe(0);
    expect(pruned.out).toMatch(new RegExp(`^pruned at ${ISO}: removed\\n`));
    expect(pruned.out.split('\n').slice(1)).toEqual(body);
    const again = await run(['--db', db, '--json']);
    const report = JSON.parse(again.out);
    expect(report).toEqual({
      dryRun: false,
      now: expect.any(Number),
      removed: { jobs: 0, jobEvents: 0, webhookInbox: 0, streamEvents: 0, idempotency: 0, operations: 0 },
      batches: { jobs: 0, streamEvents: 0, idempotency: 0, operations: 0 },
      complete: true,
      vacuumed: [],
    });
    expect(Math.abs(report.now - Date.now())).toBeLessThan(60_000);
  });

  it('leaves pending and running jobs and unsettled operations; the audit log still verifies', async () => {
    const { db, kept } = await seeded();
    expect((await run(['--db', db])).code).toBe(0);
    const store = await openSqliteStore({ path: db });
    try {
      expect((await store.list()).map((job) => job.id).sort()).toEqual(
        [kept.pendingJob, kept.runningJob].sort(),
      );
      expect((await store.operations.list()).map((op) => op.id)).toEqual([kept.pendingOperation]);
      expect((await store.retention.size()).rows).toEqual({
        jobs: 2,
        jobEvents: 1,
        webhookInbox: 0,
        streamEvents: 0,
        idempotency: 0,
        operations: 1,
        audit: 3,
      });
    } finally {
      await store.close();
    }
    const verified = await run(['verify', '--db', db], {}, runAuditCommand);
    expect(verified.code).toBe(0);
    expect(verified.out).toMatch(/^audit chain verified: 3 records, head 3 [0-9a-f]{64}$/);
  });

  it('the BREAKWATER_RETAIN_* variables set the retentions, as for serve', async () => {
    const { db } = await seeded();
    const env = {
      BREAKWATER_RETAIN_JOBS: 'forever',
      BREAKWATER_RETAIN_DEAD_LETTERS: '41d',
      BREAKWATER_RETAIN_WEBHOOKS: '1h',
      BREAKWATER_RETAIN_STREAM_EVENTS: '3600000',
      BREAKWATER_RETAIN_OPERATIONS: '60d',
    };
    const { out } = await run(['--dry-run', '--db', db, '--json'], env);
    // Jobs kept forever keep their deliveries too (a delivery leaves with its job).
    expect(JSON.parse(out).removed).toEqual({
      ...SEEDED_REMOVED,
      jobs: 0,
      jobEvents: 0,
      webhookInbox: 0,
      operations: 0,
    });
  });

  it('refuses a bad command line or variable with exit code 2, and a missing database with 1', async () => {
    const { db } = await seeded();
    const refusal = async (argv: string[], env: NodeJS.ProcessEnv = {}) => {
      const error = await run(argv, env).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(CliError);
      return error as CliError;
    };
    const size = await refusal(['--db', db, '--batch-size', '0']);
    expect([size.exitCode, size.message]).toEqual([
      2,
      "--batch-size must be an integer from 1 to 10000, got '0'",
    ]);
    const unknown = await refusal(['--db', db, '--older-than', '3d']);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.message).toMatch(/^Unknown option '--older-than'/);
    const variable = await refusal(['--db', db], { BREAKWATER_RETAIN_JOBS: 'a week' });
    expect([variable.exitCode, variable.message]).toEqual([
      2,
      "BREAKWATER_RETAIN_JOBS must be a duration such as 90s, 30m, 12h or 7d, or forever, got 'a week'",
    ]);
    const vacuum = await refusal(['--db', db], { BREAKWATER_PRUNE_VACUUM: 'full' });
    expect([vacuum.exitCode, vacuum.message]).toEqual([
      2,
      "BREAKWATER_PRUNE_VACUUM must be one of auto, always, never, got 'full'",
    ]);
    const missing = await refusal(['--db', `${db}.missing`]);
    expect(missing.exitCode).toBe(1);
    expect((await run(['--help'])).out).toMatch(/^Usage: breakwater prune \[options\]/);
  });
});

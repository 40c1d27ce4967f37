import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/context.js';
import { runWebhooksCommand } from '../../src/cli/webhooks-command.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { tempDb, useCleanups } from './support.js';

/** `breakwater webhooks list|show|replay` against a real SQLite file. */

const defer = useCleanups();

async function seeded(): Promise<string> {
  const path = tempDb(defer);
  const store = await openSqliteStore({ path });
  for (const [eventId, type] of [
    ['evt_1', 'charge.succeeded'],
    ['evt_2', 'charge.refunded'],
  ] as const) {
    await store.acceptWebhook(
      {
        source: 'payments',
        eventId,
        eventType: type,
        receivedAt: Date.UTC(2026, 0, 1),
        occurredAt: null,
        body: `{"id":"${eventId}"}`,
      },
      (inboxId) => ({
        type: 'webhook.payments',
        payload: { source: 'payments', eventId, eventType: type, inboxId },
        runAt: 0,
        priority: 0,
        maxAttempts: 5,
      }),
    );
  }
  await store.close();
  return path;
}

async function run(argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await runWebhooksCommand(argv, (line) => lines.push(line));
  return { code, out: lines.join('\n') };
}

describe('breakwater webhooks', () => {
  it('list: the newest first, as a table or JSON', async () => {
    const db = await seeded();
    const table = await run(['list', '--db', db]);
    expect(table.code).toBe(0);
    const rows = table.out.split('\n');
    expect(rows[0]).toMatch(/^SOURCE\s+EVENT ID\s+TYPE\s+RECEIVED\s+JOB\s+REPLAYS$/);
    expect(rows.slice(1).map((r) => r.split(/\s+/)[1])).toEqual(['evt_2', 'evt_1']);
    const json = JSON.parse((await run(['list', '--db', db, '--json', '--limit', '1'])).out) as unknown[];
    expect(json).toEqual([
      expect.objectContaining({ eventId: 'evt_2', eventType: 'charge.refunded', replays: 0 }),
    ]);
    expect((await run(['list', '--db', db, '--source', 'github'])).out).toBe('no webhook events');
  });

  it('show: the event, its body and its job', async () => {
    const db = await seeded();
    const { code, out } = await run(['show', 'payments', 'evt_1', '--db', db]);
    expect(code).toBe(0);
    expect(out).toContain('event id:    evt_1');
    expect(out).toContain('type:        charge.succeeded');
    expect(out).toMatch(/job:\s+job_\S+ pending, attempts 0\/5/);
    expect(out.endsWith('body:\n{"id":"evt_1"}')).toBe(true);
  });

  it('replay: a new pending job for the event, the old one kept', async () => {
    const db = await seeded();
    const before = JSON.parse((await run(['show', 'payments', 'evt_1', '--db', db, '--json'])).out) as {
      jobId: string;
    };
    const { code, out } = await run(['replay', 'payments', 'evt_1', '--db', db]);
    expect(code).toBe(0);
    expect(out).toMatch(/^payments event evt_1 replayed: job job_\S+ is pending \(replay 1\)$/);
    const after = JSON.parse((await run(['show', 'payments', 'evt_1', '--db', db, '--json'])).out) as {
      jobId: string;
      replays: number;
      job: { status: string; type: string };
    };
    expect(after.jobId).not.toBe(before.jobId);
    expect(after).toMatchObject({ replays: 1, job: { status: 'pending', type: 'webhook.payments' } });
    // The replay is an admin action in the audit log.
    const store = await openSqliteStore({ path: db });
    const bodies = (await store.audit.read()).map((r) => JSON.parse(r.body) as Record<string, unknown>);
    await store.close();
    expect(bodies).toEqual([
      expect.objectContaining({
        action: 'admin.webhook_replay',
        target: 'payments/evt_1',
        data: { job_id: after.jobId },
      }),
    ]);
  });

  it('says what is wrong: unknown event (1), bad command line (2), no database (1)', async () => {
    const db = await seeded();
    await expect(run(['replay', 'payments', 'evt_9', '--db', db])).rejects.toEqual(
      new CliError('there is no payments webhook event evt_9'),
    );
    await expect(run(['show', 'payments', '--db', db])).rejects.toMatchObject({ exitCode: 2 });
    await expect(run(['purge', '--db', db])).rejects.toMatchObject({ exitCode: 2 });
    await expect(run(['list', '--limit', '0', '--db', db])).rejects.toMatchObject({ exitCode: 2 });
    const nowhere = join(db, '..', 'missing.db');
    await expect(run(['list', '--db', nowhere])).rejects.toMatchObject({
      exitCode: 1,
      message: `there is no database at ${nowhere} (nothing has run with it yet; check --db or $DATABASE_URL)`,
    });
    expect((await run([])).code).toBe(2);
    expect((await run(['--help'])).code).toBe(0);
  });
});

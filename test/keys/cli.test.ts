/** `breakwater keys create|list|revoke` against a real SQLite file, and the keys it makes verified. */
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/context.js';
import { runKeysCommand } from '../../src/cli/keys-command.js';
import { createApiKeys } from '../../src/http/keys/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { tempDb, useCleanups } from '../support/cleanups.js';

const defer = useCleanups();
const DAY = 86_400_000;

async function run(argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await runKeysCommand(argv, (line) => lines.push(line));
  return { code, out: lines.join('\n') };
}

async function refused(argv: string[]): Promise<CliError> {
  const error = await run(argv).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CliError);
  return error as CliError;
}

/** The audit log's records, parsed. */
async function audit(db: string): Promise<Record<string, unknown>[]> {
  const store = await openSqliteStore({ path: db });
  try {
    return (await store.audit.read(0, 100)).map((r) => JSON.parse(r.body) as Record<string, unknown>);
  } finally {
    await store.close();
  }
}

describe('breakwater keys', () => {
  it('create prints the key once (a new database is made); the store keeps its hash, and it verifies', async () => {
    const db = tempDb(defer, 'breakwater-keys-cli');
    expect(existsSync(db)).toBe(false);
    const before = Date.now();
    const { code, out } = await run([
      'create',
      '--name',
      'ci-bot',
      '--scopes',
      'mcp,ai',
      '--metadata',
      'user=alice,team=red',
      '--metadata',
      'plan=pro',
      '--trusted-backend',
      '--expires-in',
      '30d',
      '--allowed-models',
      'openai/gpt-4o-mini,dynamic/support',
      '--budget',
      '5/day',
      '--budget',
      '$0.5/1h',
      '--rate',
      '100/min',
      '--db',
      db,
    ]);
    expect(code).toBe(0);
    const lines = out.split('\n');
    const key = lines[2]!.trim();
    const [, id, secret] = /^bw_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/.exec(key)!;
    expect(lines[0]).toMatch(
      new RegExp(`^created key ${id} \\(ci-bot\\): scopes mcp, ai; expires \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`),
    );
    expect(lines.slice(3)).toEqual([
      '',
      'This is the only time the key is shown: it cannot be shown again (only its hash is stored).',
      'Keep it in a secret manager now; if it is lost, revoke it and create another.',
    ]);

    const store = await openSqliteStore({ path: db });
    defer(() => store.close());
    const record = (await store.keys.get(id!))!;
    expect(record).toMatchObject({
      name: 'ci-bot',
      hash: createHash('sha256').update(secret!).digest('hex'),
      scopes: ['mcp', 'ai'],
      metadata: { user: 'alice', team: 'red', plan: 'pro' },
      trustedBackend: true,
      ai: {
        allowedModels: ['openai/gpt-4o-mini', 'dynamic/support'],
        budgets: [
          { limitUsd: 5, windowMs: DAY, window: 'fixed' },
          { limitUsd: 0.5, windowMs: 3_600_000, window: 'fixed' },
        ],
        rateRules: [{ limit: 100, windowMs: 60_000, window: 'fixed' }],
      },
      revokedAt: null,
    });
    expect(record.expiresAt! - record.createdAt).toBe(30 * DAY);
    expect(record.createdAt).toBeGreaterThanOrEqual(before);
    expect(await createApiKeys({ store }).verify(key)).toMatchObject({ id: `key:${id}`, name: 'ci-bot' });

    // Audited without the secret or its hash.
    const entries = await audit(db);
    expect(entries).toEqual([
      expect.objectContaining({
        action: 'admin.key_create',
        target: `key:${id}`,
        data: {
          name: 'ci-bot',
          scopes: ['mcp', 'ai'],
          trusted_backend: true,
          expires_at: new Date(record.expiresAt!).toISOString(),
        },
      }),
    ]);
    expect(JSON.stringify(entries)).not.toContain(secret);
    expect(JSON.stringify(entries)).not.toContain(record.hash);
  });

  it('create --json gives the key and its view; list never shows a secret or a hash; --all shows revoked keys', async () => {
    const db = tempDb(defer, 'breakwater-keys-cli');
    const first = JSON.parse(
      (await run(['create', '--name', 'a', '--scopes', 'jobs', '--json', '--db', db])).out,
    );
    expect(Object.keys(first)).toEqual([
      'key',
      'id',
      'principal_id',
      'name',
      'scopes',
      'metadata',
      'trusted_backend',
      'ai',
      'state',
      'created_at',
      'expires_at',
      'revoked_at',
    ]);
    expect(first).toMatchObject({ name: 'a', scopes: ['jobs'], metadata: {}, ai: null, state: 'active' });
    expect(first.key).toMatch(new RegExp(`^bw_${first.id}_`));
    const second = JSON.parse(
      (await run(['create', '--name', 'b', '--scopes', 'admin', '--expires-in', '2h', '--json', '--db', db]))
        .out,
    );

    const list = (await run(['list', '--db', db])).out.split('\n');
    expect(list[0]).toMatch(/^ID\s+NAME\s+SCOPES\s+METADATA\s+TRUSTED\s+EXPIRES\s+STATE$/);
    expect(list[1]).toMatch(new RegExp(`^${second.id}\\s+b\\s+admin\\s+-\\s+no\\s+\\d{4}-\\S+Z\\s+active$`));
    expect(list[2]).toMatch(new RegExp(`^${first.id}\\s+a\\s+jobs\\s+-\\s+no\\s+never\\s+active$`));

    expect(await run(['revoke', first.id, '--db', db])).toEqual({
      code: 0,
      out: `key ${first.id} (a) revoked; running gateways refuse it within their cache time (5 s by default)`,
    });
    const again = await run(['revoke', `key:${first.id}`, '--db', db]);
    expect(again.out).toMatch(
      new RegExp(`^key ${first.id} \\(a\\) was already revoked at \\S+Z; nothing changed$`),
    );

    expect((await run(['list', '--db', db])).out.split('\n')).toHaveLength(2);
    const all = (await run(['list', '--all', '--db', db])).out;
    expect(all).toMatch(new RegExp(`${first.id}\\s+a\\s+jobs\\s+-\\s+no\\s+never\\s+revoked \\S+Z`));
    const json = JSON.parse((await run(['list', '--all', '--json', '--db', db])).out) as Record<
      string,
      unknown
    >[];
    expect(json.map((k) => [k.id, k.state])).toEqual([
      [second.id, 'active'],
      [first.id, 'revoked'],
    ]);
    for (const text of [all, JSON.stringify(json)]) {
      expect(text).not.toContain(first.key.slice(20));
      expect(text).not.toContain('hash');
    }
    expect((await run(['list', '--limit', '1', '--all', '--db', db])).out.split('\n')).toHaveLength(2);

    // One revoke audited; the second changed nothing.
    expect((await audit(db)).map((e) => [e.action, e.target])).toEqual([
      ['admin.key_create', `key:${first.id}`],
      ['admin.key_create', `key:${second.id}`],
      ['admin.key_revoke', `key:${first.id}`],
    ]);
  });

  it('an empty list says how to see revoked keys', async () => {
    const db = tempDb(defer, 'breakwater-keys-cli');
    await (await openSqliteStore({ path: db })).close();
    expect(await run(['list', '--db', db])).toEqual({
      code: 0,
      out: 'no keys (revoked ones are listed with --all)',
    });
    expect((await run(['list', '--all', '--db', db])).out).toBe('no keys');
  });

  it('bad command lines exit 2 naming the option; a missing key or database exits 1', async () => {
    const db = tempDb(defer, 'breakwater-keys-cli');
    const usage: [string[], string][] = [
      [['create', '--scopes', 'ai'], 'keys create needs --name <name>'],
      [['create', '--name', 'k'], 'keys create needs --scopes <list> (mcp, ai, jobs, metrics, admin)'],
      [
        ['create', '--name', 'k', '--scopes', 'ai,root'],
        "--scopes: 'root' is not a scope; use mcp, ai, jobs, metrics, admin",
      ],
      [
        ['create', '--name', 'k', '--scopes', 'ai', '--metadata', 'alice'],
        "--metadata takes key=value pairs (user=alice,team=red), got 'alice'",
      ],
      [['create', '--name', 'k', '--scopes', 'ai', '--metadata', 'a=1,a=2'], '--metadata gives a twice'],
      [
        ['create', '--name', 'k', '--scopes', 'ai', '--metadata', 'user id=1'],
        '--metadata: keys must be 1 to 64 of A-Z a-z 0-9 _ . -',
      ],
      [
        ['create', '--name', 'k', '--scopes', 'ai', '--expires-in', '1.5h'],
        "--expires-in must be a duration such as 30d, 12h, 90m, 45s, 500ms or a number of ms, got '1.5h'",
      ],
      [['create', '--name', 'k', '--scopes', 'ai', '--expires-in', 'day'], '--expires-in must be a duration'],
      [
        ['create', '--name', 'k', '--scopes', 'ai', '--budget', '5'],
        "--budget takes <amount>/<window> (5/day, 0.5/hour), got '5'",
      ],
      [
        ['create', '--name', 'k', '--scopes', 'ai', '--budget', '0/day'],
        "--budget must spend a positive number of USD per window (5/day), got '0/day'",
      ],
      [
        ['create', '--name', 'k', '--scopes', 'ai', '--budget', '5/fortnight'],
        '--budget window must be day, hour, min, a duration',
      ],
      [
        ['create', '--name', 'k', '--scopes', 'ai', '--rate', '1.5/min'],
        "--rate must allow a whole number >= 1 of requests per window (100/min), got '1.5/min'",
      ],
      [
        ['create', '--name', 'k', '--scopes', 'ai', '--budget', `1000001/day`],
        '--budget: Too big: expected number to be <=1000000',
      ],
      [
        ['create', '--name', 'x'.repeat(101), '--scopes', 'ai'],
        '--name: Too big: expected string to have <=100 characters',
      ],
      [['create', '--name', 'a\u001b[2J', '--scopes', 'ai'], '--name: must not hold control characters'],
      [['revoke'], 'keys revoke needs a key id'],
      [['list', '--limit', '0'], "--limit must be an integer from 1 to 1000, got '0'"],
      [['rotate'], "unknown keys subcommand 'rotate'"],
      [
        ['create', '--name', 'k', '--scopes', 'ai', '--db', ' '],
        '--db must name a database, got an empty value',
      ],
    ];
    for (const [argv, message] of usage) {
      const error = await refused(
        argv[0] === 'create' && !argv.includes('--db') ? [...argv, '--db', db] : argv,
      );
      expect([argv, error.exitCode, error.message.split('\n')[0]!.slice(0, message.length)]).toEqual([
        argv,
        2,
        message,
      ]);
    }
    expect(existsSync(db)).toBe(false); // nothing was created by a refused command

    const missing = await refused(['list', '--db', db]);
    expect([missing.exitCode, missing.message]).toEqual([
      1,
      `there is no database at ${db} (nothing has run with it yet; check --db or $DATABASE_URL)`,
    ]);
    await run(['create', '--name', 'k', '--scopes', 'ai', '--db', db]);
    const unknown = await refused(['revoke', 'ffffffffffffffff', '--db', db]);
    expect([unknown.exitCode, unknown.message]).toEqual([1, 'there is no key with id ffffffffffffffff']);
    expect(await run(['--help'])).toMatchObject({ code: 0 });
    expect(await run([])).toMatchObject({ code: 2 });
  });
});

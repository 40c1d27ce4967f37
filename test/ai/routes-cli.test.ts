/**
 * `breakwater routes list|show|create|deploy|rollback` against a real SQLite file, and a gateway on the same
 * file following what the command deployed.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/context.js';
import { runRoutesCommand } from '../../src/cli/routes-command.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { routeGateway, step } from './routes-support.js';
import { ask, startSim, tempDb, useCleanups } from './support.js';

const defer = useCleanups();

/** An empty database (as after a first `serve`) and a folder for definition files. */
async function database(): Promise<{ db: string; file: (name: string, content: unknown) => string }> {
  const db = tempDb(defer, 'breakwater-routes-cli');
  await (await openSqliteStore({ path: db })).close();
  const file = (name: string, content: unknown): string => {
    const path = join(dirname(db), name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };
  return { db, file };
}

async function run(argv: string[], stdin = ''): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await runRoutesCommand(
    argv,
    (line) => lines.push(line),
    () => stdin,
  );
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

describe('breakwater routes', () => {
  it('create, deploy, show, list, rollback (below, and --to); every change audited', async () => {
    const { db, file } = await database();
    expect((await run(['list', '--db', db])).out).toBe('no routes');

    const a = file('a.json', step('a'));
    expect(await run(['create', 'gifts', '--file', a, '--note', 'first', '--db', db])).toEqual({
      code: 0,
      out: "gifts: version 1 created as a draft; deploy it with 'breakwater routes deploy gifts 1'",
    });
    expect((await run(['create', 'gifts', '--file', file('b.json', step('b')), '--db', db])).out).toContain(
      'version 2',
    );
    expect(
      (await run(['create', 'gifts', '--file', '-', '--db', db], JSON.stringify(step('c')))).out,
    ).toContain('version 3');

    expect((await run(['deploy', 'gifts', '1', '--db', db])).out).toBe(
      'gifts: deployed version 1 (was none)',
    );
    expect((await run(['deploy', 'gifts', '3', '--db', db])).out).toBe('gifts: deployed version 3 (was 1)');
    expect((await run(['deploy', 'gifts', '3', '--db', db])).out).toBe(
      'gifts: version 3 is already deployed; nothing changed',
    );

    const list = (await run(['list', '--db', db])).out.split('\n');
    expect(list[0]).toMatch(/^NAME\s+DEPLOYED\s+LATEST\s+DEPLOYED AT$/);
    expect(list[1]).toMatch(/^gifts\s+3\s+3\s+\d{4}-\d\d-\d\dT/);

    const shown = (await run(['show', 'gifts', '--db', db])).out;
    expect(shown).toContain('deployed:  3 (since ');
    expect(shown).toMatch(
      /VERSION\s+STATE\s+CREATED\s+NOTE\n3\s+deployed\s+\S+\n2\s+draft\s+\S+\n1\s+draft\s+\S+\s+first/,
    );
    expect(shown).toContain(`definition of version 3:\n${JSON.stringify(step('c'), null, 2)}`);
    const json = JSON.parse((await run(['show', 'gifts', '--db', db, '--json'])).out) as {
      deployed: number;
      versions: { version: number; note: string | null }[];
    };
    expect(json.deployed).toBe(3);
    expect(json.versions.map((v) => [v.version, v.note])).toEqual([
      [3, null],
      [2, null],
      [1, 'first'],
    ]);

    expect((await run(['rollback', 'gifts', '--db', db])).out).toBe(
      'gifts: rolled back to version 2 (was 3) (the version below the deployed one)',
    );
    expect((await run(['rollback', 'gifts', '--to', '1', '--db', db])).out).toBe(
      'gifts: rolled back to version 1 (was 2)',
    );

    const store = await openSqliteStore({ path: db });
    const audit = (await store.audit.read()).map((r) => JSON.parse(r.body) as Record<string, unknown>);
    await store.close();
    expect(audit.map((r) => [r.action, r.target, r.data])).toEqual([
      ['admin.route_create', 'gifts@1', { note: 'first' }],
      ['admin.route_create', 'gifts@2', { note: null }],
      ['admin.route_create', 'gifts@3', { note: null }],
      ['admin.route_deploy', 'gifts@1', { previous: null }],
      ['admin.route_deploy', 'gifts@3', { previous: 1 }],
      ['admin.route_rollback', 'gifts@2', { previous: 3 }],
      ['admin.route_rollback', 'gifts@1', { previous: 2 }],
    ]);
    expect(audit.every((r) => String(r.actor).startsWith('cli:'))).toBe(true);
  });

  it('a gateway on the same file serves what the command deployed', async () => {
    const { db, file } = await database();
    const sim = await startSim(defer);
    const store = await openSqliteStore({ path: db });
    defer(() => store.close());
    const { client, resolver } = await routeGateway(defer, { sim }, store);
    const served = async () => {
      const { response } = await client.chat.completions.create(ask('dynamic/gifts')).withResponse();
      return response.headers.get('x-breakwater-route');
    };
    await run(['create', 'gifts', '--file', file('a.json', step('a')), '--db', db]);
    await run(['create', 'gifts', '--file', file('b.json', step('b')), '--db', db]);
    await run(['deploy', 'gifts', '2', '--db', db]);
    expect(await served()).toBe('gifts@2');
    await run(['rollback', 'gifts', '--db', db]);
    resolver.invalidate(); // the refresh interval, without waiting for it
    expect(await served()).toBe('gifts@1');
  });

  it('says what is wrong: a bad definition with its path, unknown version or route (1), bad command line (2)', async () => {
    const { db, file } = await database();
    const bad = await refused([
      'create',
      'gifts',
      '--file',
      file('bad.json', {
        type: 'fallback',
        chain: [step('a'), { type: 'model', name: 'b', provider: 'sim' }],
      }),
      '--db',
      db,
    ]);
    expect(bad.exitCode).toBe(1);
    expect(bad.message).toBe(
      'The route definition is invalid at $.chain[1].model: Invalid input: expected string, received undefined.',
    );
    expect(
      (await refused(['create', 'gifts', '--file', file('x.json', '{nope'), '--db', db])).message,
    ).toMatch(/is not JSON/);
    expect((await run(['list', '--db', db])).out).toBe('no routes');

    await run(['create', 'gifts', '--file', file('a.json', step('a')), '--db', db]);
    expect((await refused(['deploy', 'gifts', '4', '--db', db])).message).toBe(
      'The route gifts has no version 4.',
    );
    expect((await refused(['rollback', 'gifts', '--db', db])).message).toBe(
      'The route gifts has no deployed version to roll back from.',
    );
    expect((await refused(['show', 'other', '--db', db])).message).toBe('there is no route named other');

    const usage = await refused(['create', 'gifts', '--db', db]);
    expect(usage.exitCode).toBe(2);
    expect(usage.message).toMatch(/^routes create needs --file <path>/);
    expect((await refused(['deploy', 'gifts', 'two', '--db', db])).exitCode).toBe(2);
    expect((await refused(['deploy', 'gifts', '--db', db])).exitCode).toBe(2);
    expect((await refused(['rollback', 'gifts', '--to', '0', '--db', db])).exitCode).toBe(2);
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('rollback <name> [--to <version>]');
  });
});

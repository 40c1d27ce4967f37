/**
 * What importing an entry loads, seen from a fresh `node` process: the package root must load no HTTP
 * server, database driver, Redis client, MCP SDK or HTTP client library, and `breakwater/jobs` no driver
 * until a store is opened. Every module the ESM loader resolves is recorded by `record-loads.mjs`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './entries.js';

const run = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), 'breakwater-loads-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const HEAVY = [
  'fastify',
  'pg',
  'ioredis',
  'better-sqlite3',
  '@modelcontextprotocol/sdk',
  '@modelcontextprotocol/server',
  '@modelcontextprotocol/node',
  'undici',
];
const DRIVERS = ['pg', 'ioredis', 'better-sqlite3'];

/** The npm packages a child process resolved while running `script` (ESM, top-level await allowed). */
async function packagesLoadedBy(script: string): Promise<string[]> {
  const log = join(scratch, `${Math.random().toString(36).slice(2)}.log`);
  await run(
    process.execPath,
    ['--import', './test/package/record-loads.mjs', '--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: ROOT, env: { ...process.env, BREAKWATER_LOAD_LOG: log } },
  );
  const packages = new Set<string>();
  for (const url of readFileSync(log, 'utf8').split('\n')) {
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (match !== null) packages.add(match[1]!);
  }
  return [...packages].sort();
}

describe('what an entry loads', () => {
  it('the root loads none of fastify, pg, ioredis, better-sqlite3, the MCP SDK or undici', async () => {
    const loaded = await packagesLoadedBy(`await import('./src/entries/index.ts');`);
    expect(loaded.filter((name) => HEAVY.includes(name))).toEqual([]);
    // That the recording sees packages is shown below, where opening a store loads better-sqlite3.
  }, 30_000);

  it('breakwater/testing loads none of them either', async () => {
    const loaded = await packagesLoadedBy(`await import('./src/entries/testing.ts');`);
    expect(loaded.filter((name) => HEAVY.includes(name))).toEqual([]);
  }, 30_000);

  it('breakwater/jobs loads no driver until a store is opened, then only the one its URL names', async () => {
    const imported = await packagesLoadedBy(`await import('./src/entries/jobs.ts');`);
    expect(imported.filter((name) => HEAVY.includes(name))).toEqual([]);
    const opened = await packagesLoadedBy(
      `const { openStore } = await import('./src/entries/jobs.ts');
       const store = await openStore({ url: ':memory:' });
       await store.close();`,
    );
    expect(opened.filter((name) => DRIVERS.includes(name))).toEqual(['better-sqlite3']);
  }, 30_000);

  it('breakwater/ai loads no Redis client until createRedisLimits makes one', async () => {
    const loaded = await packagesLoadedBy(`await import('./src/entries/ai.ts');`);
    expect(loaded.filter((name) => DRIVERS.includes(name))).toEqual([]);
  }, 30_000);
});

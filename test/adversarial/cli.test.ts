import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const version = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('the breakwater CLI', () => {
  it('demo runs to completion, exits 0 and ends with an idle bulkhead and a closed breaker', () => {
    const run = cli('demo');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    for (const phase of ['Phase 1', 'Phase 2', 'Phase 3', 'Phase 4', 'Phase 5']) {
      expect(run.stdout).toContain(phase);
    }
    expect(run.stdout).toMatch(/call \d: circuit_open in \d+ ms \(retry_after_ms \d+\)/);
    expect(run.stdout).toMatch(/call 8: timeout in \d+ ms/);
    expect(run.stdout.match(/: bulkhead_full in/g)).toHaveLength(2);
    expect(run.stdout.match(/burst \d: ok/g)).toHaveLength(5);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe(
      'Final state: {"breaker":"closed","bulkhead":{"name":"gift-service","inUse":0,"queued":0,"maxConcurrent":3,"maxQueue":2}}',
    );
  }, 60_000);

  it('--help and -h print the usage and exit 0', () => {
    for (const flag of ['--help', '-h']) {
      const run = cli(flag);
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(/^Usage: breakwater <command> \[options\]/);
      expect(run.stdout).toContain('demo');
      expect(run.stderr).toBe('');
    }
  }, 60_000);

  it('version and --version print the package version and exit 0', () => {
    for (const arg of ['version', '--version']) {
      const run = cli(arg);
      expect(run.status).toBe(0);
      expect(run.stdout).toBe(`${version}\n`);
    }
  }, 60_000);

  it('an unknown command exits 2 with a message on stderr', () => {
    const run = cli('bogus');
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain("breakwater: unknown command 'bogus'");
  }, 60_000);

  it('an unknown option exits 2 instead of being ignored', () => {
    const run = cli('--bogus');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--bogus');
  }, 60_000);

  it('demo --help prints help instead of running the demo', () => {
    const run = cli('demo', '--help');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: breakwater demo');
    expect(run.stdout).not.toContain('Phase 1');
  }, 60_000);
});

describe('breakwater jobs', () => {
  it('lists, shows, cancels and retries jobs in a SQLite file, and says what it did', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { openStore, createJobs } = await import('../../src/entries/jobs.js');
    const dir = mkdtempSync(join(tmpdir(), 'bw-cli-'));
    const db = join(dir, 'bw.db');
    try {
      const store = await openStore({ url: db });
      const jobs = createJobs({ store });
      jobs.defineJob('report', () => null);
      const failedJob = await store.enqueue({
        type: 'report',
        payload: {},
        runAt: 0,
        priority: 0,
        maxAttempts: 1,
      });
      const [claim] = await store.claim({ owner: 't', types: ['report'], limit: 5, leaseMs: 1000 });
      await store.fail(
        { id: claim!.job.id, token: claim!.token },
        { code: 'upstream_error', kind: 'permanent', message: 'boom' },
      );
      const pending = await jobs.enqueue('report', { n: 1 });
      await store.close();

      const list = cli('jobs', 'list', '--db', db, '--json');
      expect(list.stderr).toBe('');
      expect(list.status).toBe(0);
      const listed = JSON.parse(list.stdout) as Array<{ id: string; status: string }>;
      expect(listed.map((j) => [j.id, j.status]).sort()).toEqual(
        [
          [pending, 'pending'],
          [failedJob.job.id, 'failed'],
        ].sort(),
      );

      const onlyFailed = cli('jobs', 'list', '--db', db, '--status', 'failed');
      expect(onlyFailed.status).toBe(0);
      expect(onlyFailed.stdout.split('\n')[0]).toMatch(/^ID\s+TYPE\s+STATUS\s+ATTEMPTS\s+CREATED\s+UPDATED$/);
      expect(onlyFailed.stdout).toContain(failedJob.job.id);
      expect(onlyFailed.stdout).not.toContain(pending);

      const show = cli('jobs', 'show', failedJob.job.id, '--db', db);
      expect(show.status).toBe(0);
      expect(show.stdout).toContain('status:    failed');
      expect(show.stdout).toMatch(/#1 \S+ job\.started/);
      expect(show.stdout).toMatch(/#2 \S+ job\.failed/);

      const retried = cli('jobs', 'retry', failedJob.job.id, '--db', db);
      expect(retried.stdout).toBe(`job ${failedJob.job.id} is pending again (attempts reset)\n`);
      expect(retried.status).toBe(0);

      const canceled = cli('jobs', 'cancel', pending, '--db', db);
      expect(canceled.stdout).toBe(`job ${pending} is canceled\n`);

      const retryAgain = cli('jobs', 'retry', pending, '--db', db);
      expect(retryAgain.status).toBe(1);
      expect(retryAgain.stderr).toBe(
        `breakwater: Only a failed job can be retried; job ${pending} is canceled.\n`,
      );

      const missing = cli('jobs', 'show', 'nope', '--db', db);
      expect(missing.status).toBe(1);
      expect(missing.stderr).toBe('breakwater: there is no job nope\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('rejects bad options with exit 2 and names the problem', async () => {
    const badStatus = cli('jobs', 'list', '--status', 'done', '--db', ':memory:');
    expect(badStatus.status).toBe(2);
    expect(badStatus.stderr).toContain(
      "--status must be one of pending, in_progress, input_required, completed, failed, canceled, got 'done'",
    );
    const noId = cli('jobs', 'cancel');
    expect(noId.status).toBe(2);
    expect(noId.stderr).toContain('jobs cancel needs a job id');
    const emptyDb = cli('jobs', 'list', '--db', '');
    expect(emptyDb.status).toBe(2);
    expect(emptyDb.stderr).toContain('--db must name a database, got an empty value');
    const missing = cli('jobs', 'list', '--db', '/tmp/breakwater-no-such-dir/x.db');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe(
      'breakwater: there is no database at /tmp/breakwater-no-such-dir/x.db (nothing has run with it yet; check --db or $DATABASE_URL)\n',
    );
    const { existsSync } = await import('node:fs');
    expect(existsSync('/tmp/breakwater-no-such-dir')).toBe(false);
    const badDb = cli('jobs', 'list', '--db', 'mysql://x@y/z');
    expect(badDb.status).toBe(2);
    expect(badDb.stderr).toContain('openStore: url must be postgres://');
  }, 60_000);

  it('says which database it cannot open, and exits 1', async () => {
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'bw-cli-'));
    try {
      // A file that exists but is not a database.
      const db = join(dir, 'notes.db');
      writeFileSync(db, 'hello, not SQLite');
      const run = cli('jobs', 'list', '--db', db);
      expect(run.status).toBe(1);
      expect(run.stderr).toBe(
        `breakwater: cannot open the SQLite database at ${db}: file is not a database (SQLITE_NOTADB)\n`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

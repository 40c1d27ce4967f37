/**
 * Ctrl-C under `npm start`, as a terminal delivers it: `npm start` runs in a process group of its own
 * (`detached`, as a shell's foreground job is), and each SIGINT goes to the whole group, so the gateway gets
 * it from the "terminal" and once more from npm, which forwards every SIGINT to its child. Each test starts
 * the real command (`npm start -- …`: the package's start script, GiftGenius on a temporary SQLite file and
 * the example services this test runs), starts a deep analysis job that would run for minutes, and signals.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/entries/jobs.js';
import { connect, startBackends, tempDb, until, useCleanups, type Backends } from './support.js';

const defer = useCleanups();
const root = fileURLToPath(new URL('../../', import.meta.url));
/** npm itself and tsx take a few seconds to start on a busy machine. */
const SLOW = 60_000;
/** The npm next to this node (the one `npm test` runs with), else the first on PATH. */
const NPM = existsSync(join(dirname(process.execPath), 'npm'))
  ? join(dirname(process.execPath), 'npm')
  : 'npm';
const SHUTTING_DOWN = 'breakwater: SIGINT received, shutting down (send it again to exit at once)';

interface NpmStart {
  child: ChildProcess;
  stdout(): string;
  /** Sends `signal` to npm's process group, as a terminal's Ctrl-C does. */
  group(signal: NodeJS.Signals): void;
  exited: Promise<number | null>;
}

/** `npm start -- <args>` in a process group of its own, with the example services and nothing inherited that picks a store. */
function npmStart(backends: Backends, args: string[]): NpmStart {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIFT_URL: backends.urls.giftUrl,
    COMMERCE_URL: backends.urls.commerceUrl,
    ANALYTICS_URL: backends.urls.analyticsUrl,
    LLM_PORT: '0',
    // Each of the job's four steps waits a minute: the job is still running when the signals come.
    GIFTGENIUS_STEP_MS: '60000',
    npm_config_update_notifier: 'false',
  };
  for (const name of ['DATABASE_URL', 'BREAKWATER_DB', 'BREAKWATER_APP', 'BREAKWATER_HOST', 'PORT']) {
    delete env[name];
  }
  const child = spawn(NPM, ['start', '--', ...args], {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', () => undefined);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const group = (signal: NodeJS.Signals) => process.kill(-child.pid!, signal);
  defer(() => {
    try {
      group('SIGKILL');
    } catch {
      // the group has already ended
    }
  });
  return { child, stdout: () => out, group, exited };
}

/** Starts the gateway under npm, waits for its banner, and starts a deep analysis that is running when this resolves. */
async function startWithRunningJob(graceMs: number) {
  const backends = await startBackends(defer);
  const db = tempDb(defer);
  const npm = npmStart(backends, ['--db', db, '--port', '0', '--grace-ms', String(graceMs)]);
  await until(
    () => /\n {2}store .*\n/.test(npm.stdout()) || npm.child.exitCode !== null,
    'the banner',
    40_000,
  );
  const url = /gateway listening at (http:\/\/\S+)/.exec(npm.stdout())?.[1];
  if (url === undefined) throw new Error(`no banner: ${npm.stdout()}`);

  const mcp = await connect(defer, `${url}/mcp`);
  const request = { interests: ['garden'], budget_usd: 60, recipient: 'Kim' };
  const jobId: string = (await mcp.call('start_deep_analysis', request)).structuredContent.job_id;
  await until(
    async () =>
      (await mcp.call('get_job_status', { job_id: jobId })).structuredContent.status === 'in_progress',
    'the job to run',
    15_000,
  );
  await mcp.close();
  return { npm, db, jobId };
}

/** The job as the SQLite file holds it once the gateway has gone. */
async function storedJob(db: string, jobId: string) {
  const store = await openStore({ url: db });
  try {
    return await store.get(jobId);
  } finally {
    await store.close();
  }
}

describe('Ctrl-C under npm start', () => {
  it(
    'two SIGINTs 5 ms apart (each also forwarded by npm) stop gracefully: exit 0, "stopped", the job released',
    async () => {
      const { npm, db, jobId } = await startWithRunningJob(200);
      npm.group('SIGINT');
      await new Promise((resolve) => setTimeout(resolve, 5));
      npm.group('SIGINT');

      expect(await npm.exited).toBe(0);
      const lines = npm.stdout().trimEnd().split('\n');
      expect(lines.filter((line) => line.startsWith('breakwater: SIGINT'))).toEqual([SHUTTING_DOWN]);
      expect(lines.at(-1)).toBe('breakwater: stopped');
      // Released at the end of the grace: pending again for the next start, the interrupted run not counted.
      expect(await storedJob(db, jobId)).toMatchObject({
        status: 'pending',
        attempts: 0,
        leaseOwner: null,
      });
    },
    SLOW,
  );

  it(
    'a second Ctrl-C after a pause exits at once: exit 1, no "stopped", the job left to its lease',
    async () => {
      const { npm, db, jobId } = await startWithRunningJob(60_000);
      npm.group('SIGINT');
      await until(() => npm.stdout().includes(SHUTTING_DOWN), 'the shutdown to begin', 10_000);
      // Past the 500 ms in which copies of the first signal count as the same request; the shutdown is
      // still waiting for the job (a minute of grace).
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      npm.group('SIGINT');

      expect(await npm.exited).toBe(1);
      const lines = npm.stdout().trimEnd().split('\n');
      expect(lines.filter((line) => line.startsWith('breakwater: SIGINT'))).toEqual([
        SHUTTING_DOWN,
        'breakwater: SIGINT received again, exiting at once (running jobs are taken over when their lease lapses)',
      ]);
      expect(lines).not.toContain('breakwater: stopped');
      expect(await storedJob(db, jobId)).toMatchObject({ status: 'in_progress', attempts: 1 });
    },
    SLOW,
  );
});

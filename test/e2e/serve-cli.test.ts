/**
 * `breakwater serve` and `breakwater worker` as a user runs them: real processes (`node --import tsx
 * src/cli/main.ts …`) with the GiftGenius app, pointed at example services the test runs (GIFT_URL,
 * COMMERCE_URL, ANALYTICS_URL), each on its own temporary SQLite file.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, connect as netConnect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadCatalog, recommendGifts } from '../../examples/giftgenius/services/index.js';
import { connect, getJson, startBackends, tempDb, until, useCleanups, type Backends } from './support.js';

const defer = useCleanups();
const root = fileURLToPath(new URL('../../', import.meta.url));
const APP = 'examples/giftgenius/app.ts';
/** Spawning node with tsx takes a second or two per process. */
const SLOW = 30_000;

/** The environment of a spawned command: the services given, nothing inherited that picks a store or port. */
function envFor(backends: Backends | undefined, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ['DATABASE_URL', 'BREAKWATER_DB', 'BREAKWATER_APP', 'BREAKWATER_HOST', 'PORT']) {
    delete env[name];
  }
  if (backends !== undefined) {
    env.GIFT_URL = backends.urls.giftUrl;
    env.COMMERCE_URL = backends.urls.commerceUrl;
    env.ANALYTICS_URL = backends.urls.analyticsUrl;
    env.LLM_PORT = '0';
  }
  return env;
}

interface Running {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stdout. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

/** Starts `breakwater <args>`; killed after the test if it is still running. */
function start(args: string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  defer(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitFor(pattern) {
      await until(() => pattern.test(out) || child.exitCode !== null, `${pattern} in the output`, 20_000);
      const match = pattern.exec(out);
      if (match === null) throw new Error(`exited ${child.exitCode} without ${pattern}: ${out}\n${err}`);
      return match;
    },
  };
}

/** Starts `serve` and resolves with its URL once it listens. */
async function serve(args: string[], env: NodeJS.ProcessEnv): Promise<Running & { url: string }> {
  const running = start(['serve', '--app', APP, '--port', '0', ...args], env);
  const [, url] = await running.waitFor(/gateway listening at (http:\/\/\S+)/);
  await running.waitFor(/\n {2}store .*\n/); // the last line of the banner
  return { ...running, url: url! };
}

describe('breakwater serve and worker', () => {
  it(
    'serve --help and worker --help print their usage and exit 0',
    () => {
      for (const command of ['serve', 'worker']) {
        const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', command, '--help'], {
          cwd: root,
          env: envFor(undefined),
          encoding: 'utf8',
          timeout: SLOW,
        });
        expect(run.status).toBe(0);
        expect(run.stderr).toBe('');
        expect(run.stdout).toMatch(new RegExp(`^Usage: breakwater ${command} \\[options\\]\\n`));
        expect(run.stdout).toContain('--app <module>');
        expect(run.stdout).toContain('--lease-ms <ms>');
        expect(run.stdout).toContain('--shared-breakers');
        if (command === 'serve') expect(run.stdout).toContain('--request-timeout-ms <ms>');
        // A lease too short for its heartbeats is a usage error, named, before anything starts.
        const bad = spawnSync(
          process.execPath,
          ['--import', 'tsx', 'src/cli/main.ts', command, '--app', APP, '--lease-ms', '2'],
          { cwd: root, env: envFor(undefined), encoding: 'utf8', timeout: SLOW },
        );
        expect([bad.status, bad.stderr]).toEqual([
          2,
          "breakwater: --lease-ms must be an integer from 3 to 3600000, got '2'\n",
        ]);
      }
    },
    SLOW,
  );

  it(
    'a port in use: a message saying what to do, exit code 1',
    async () => {
      const backends = await startBackends(defer);
      const blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      defer(() => new Promise((resolve) => blocker.close(resolve)));
      const port = (blocker.address() as { port: number }).port;

      const run = start(
        ['serve', '--app', APP, '--port', String(port), '--db', tempDb(defer)],
        envFor(backends),
      );
      expect(await run.exited).toBe(1);
      expect(run.stderr()).toBe(
        `breakwater: port ${port} on 127.0.0.1 is in use: stop the other process or choose another port with --port (or PORT)\n`,
      );
    },
    SLOW,
  );

  it(
    'serves MCP until SIGTERM, then says it stopped and exits 0',
    async () => {
      const backends = await startBackends(defer);
      const db = tempDb(defer);
      const gateway = await serve(['--db', db, '--request-timeout-ms', '300'], envFor(backends));
      expect(gateway.stdout()).toContain(`store          ${db} (worker running)`);
      // The app's own routes, one a line.
      expect(gateway.stdout()).toContain(`\n  app routes     POST ${gateway.url}/giftgenius/orders\n`);
      expect((await getJson(`${gateway.url}/healthz`)).body).toEqual({ status: 'ok' });

      // --request-timeout-ms: a body still arriving after 300 ms is answered 408 and the connection closed.
      const { port } = new URL(gateway.url);
      const slow = netConnect({ host: '127.0.0.1', port: Number(port) });
      let received = '';
      slow.on('data', (chunk: Buffer) => (received += chunk.toString()));
      const slowClosed = new Promise<void>((resolve) => slow.once('close', () => resolve()));
      slow.write(
        'POST /jobs/job_x/cancel HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
          'Content-Length: 50\r\n\r\n{"a":',
      );
      await slowClosed;
      expect(received.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');

      const mcp = await connect(defer, `${gateway.url}/mcp`);
      const request = { interests: ['tea'], budget_usd: 30, limit: 2 };
      const answer = await mcp.call('suggest_gifts', request);
      expect(answer.structuredContent).toEqual({ gifts: recommendGifts(loadCatalog(), request) });
      await mcp.close();

      gateway.child.kill('SIGTERM');
      expect(await gateway.exited).toBe(0);
      const lines = gateway.stdout().trimEnd().split('\n');
      expect(lines).toContain('breakwater: SIGTERM received, shutting down (send it again to exit at once)');
      expect(lines.at(-1)).toBe('breakwater: stopped');
      expect(gateway.stderr()).toBe('');
    },
    SLOW,
  );

  it(
    'worker runs a job a --no-worker gateway enqueued in the same SQLite file',
    async () => {
      const backends = await startBackends(defer);
      const db = tempDb(defer);
      const env = envFor(backends, { GIFTGENIUS_STEP_MS: '20' });
      const gateway = await serve(['--db', db, '--no-worker'], env);
      expect(gateway.stdout()).toContain(`store          ${db}\n`);

      const mcp = await connect(defer, `${gateway.url}/mcp`);
      const request = { interests: ['garden'], budget_usd: 60, recipient: 'Kim' };
      const jobId: string = (await mcp.call('start_deep_analysis', request)).structuredContent.job_id;
      const status = async () => (await mcp.call('get_job_status', { job_id: jobId })).structuredContent;
      // Nobody runs it here: the banner above says no worker runs in this process.
      expect(await status()).toMatchObject({ status: 'pending', attempts: 0, progress: null });

      const worker = start(['worker', '--app', APP, '--db', db], env);
      await worker.waitFor(/breakwater: worker running on /);
      await until(
        async () => (await status()).status === 'completed',
        'the worker to finish the job',
        15_000,
      );
      const done = await status();
      expect(done).toMatchObject({ attempts: 1, progress: { step: 4, total: 4 }, partial_count: 1 });
      expect(done.result.gifts).toEqual(recommendGifts(loadCatalog(), request));

      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
      expect(worker.stdout().trimEnd().split('\n').at(-1)).toBe('breakwater: stopped');
      gateway.child.kill('SIGTERM');
      expect(await gateway.exited).toBe(0);
    },
    SLOW,
  );
});

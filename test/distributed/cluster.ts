/**
 * The processes of the distributed proof (not a test file): `breakwater serve --no-worker` and
 * `breakwater worker` as a user runs them (`node --import tsx src/cli/main.ts …`), with the GiftGenius app,
 * one PostgreSQL schema (BREAKWATER_DB_SCHEMA) and one Redis database (REDIS_URL), each restartable with the
 * same command line after a SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const APP = 'examples/giftgenius/app.ts';
/** Spawning node with tsx takes seconds per process on a loaded two-CPU machine. */
const START_TIMEOUT_MS = 45_000;

/** What every process of the cluster is given. */
export interface ClusterSettings {
  databaseUrl: string;
  schema: string;
  redisUrl: string;
  services: { giftUrl: string; commerceUrl: string; analyticsUrl: string; llmUrl: string };
  webhookSecret: string;
  auditKey: string;
}

/** One `breakwater` process; {@link restart} runs the same command line again. */
export class BreakwaterProcess {
  private child!: ChildProcess;
  private out = '';
  private err = '';
  private exited!: Promise<void>;
  /** How many times it was started. */
  starts = 0;

  constructor(
    readonly name: string,
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
    /** A line of stdout that says the process is ready. */
    private readonly ready: RegExp,
  ) {}

  /** Starts it and resolves once it printed its ready line. @throws when it exits or is slow to start. */
  async start(): Promise<void> {
    this.out = '';
    this.err = '';
    this.starts++;
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...this.args], {
      cwd: ROOT,
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.out += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.err += chunk));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!this.ready.test(this.out)) {
      if (!this.alive) throw new Error(`${this.name} exited at start:\n${this.out}\n${this.err}`);
      if (Date.now() > deadline)
        throw new Error(`${this.name} did not start in time:\n${this.out}\n${this.err}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** What it printed on stderr since it was last started (for failure messages). */
  stderr(): string {
    return this.err;
  }

  /** SIGKILLs it (no shutdown of any kind) and resolves once it is gone. */
  async kill(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM, then SIGKILL when it has not stopped within `graceMs`. */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Starts it again with the same command line (port, schema, Redis). */
  restart(): Promise<void> {
    return this.start();
  }
}

/** The environment of a cluster process: the settings given, nothing inherited that picks a store or port. */
function envFor(settings: ClusterSettings): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of [
    'DATABASE_URL',
    'BREAKWATER_DB',
    'BREAKWATER_APP',
    'BREAKWATER_HOST',
    'PORT',
    'LLM_PORT',
  ]) {
    delete env[name];
  }
  return {
    ...env,
    BREAKWATER_DB_SCHEMA: settings.schema,
    REDIS_URL: settings.redisUrl,
    BREAKWATER_AUDIT_KEY: settings.auditKey,
    GIFT_URL: settings.services.giftUrl,
    COMMERCE_URL: settings.services.commerceUrl,
    ANALYTICS_URL: settings.services.analyticsUrl,
    LLM_URL: settings.services.llmUrl,
    LLM_API_KEY: 'sk-proof-not-checked',
    GIFTGENIUS_WEBHOOK_SECRET: settings.webhookSecret,
    GIFTGENIUS_STEP_MS: '0',
  };
}

/** A gateway without a worker on a fixed port (so a restart comes back at the same address). */
export function gatewayProcess(settings: ClusterSettings, name: string, port: number): BreakwaterProcess {
  return new BreakwaterProcess(
    name,
    ['serve', '--app', APP, '--no-worker', '--port', String(port), '--db', settings.databaseUrl],
    envFor(settings),
    /\n {2}store .*\n/, // the banner's last line
  );
}

/** A worker-only process. */
export function workerProcess(settings: ClusterSettings, name: string): BreakwaterProcess {
  return new BreakwaterProcess(
    name,
    ['worker', '--app', APP, '--db', settings.databaseUrl],
    envFor(settings),
    /breakwater: worker running on /,
  );
}

/** Runs a one-shot `breakwater <args>` with the cluster's environment; resolves with its exit code and stdout. */
export function runCli(
  settings: ClusterSettings,
  args: string[],
): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: envFor(settings),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout })));
}

/** `count` distinct loopback ports free now (bound together, then released). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as { port: number }).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/**
 * `breakwater serve` and `breakwater worker`: run an app as a gateway (HTTP + MCP, with a worker unless
 * `--no-worker`) or as a worker-only process, until SIGINT or SIGTERM, then shut down gracefully.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { loadApp } from '../gateway/app.js';
import { CliError, EXIT, openStoreForCli, storeUrl } from './context.js';
import { SERVER_DEFAULTS } from '../server/index.js';
import { GATEWAY_DEFAULTS, startGateway } from '../gateway/index.js';
import { watchStopSignals } from './stop-signals.js';
import { startWorker } from '../gateway/worker.js';

const COMMON_OPTIONS = `  --app <module>       the app module (default: $BREAKWATER_APP), e.g. examples/giftgenius/app.ts
  --db <url>           the store: postgres://… or a SQLite path (default: $DATABASE_URL, $BREAKWATER_DB,
                       then ./data/breakwater.db); on PostgreSQL the schema is $BREAKWATER_DB_SCHEMA
                       (default breakwater), the same in every process of a deployment
  -h, --help           show this help`;

const SHARED_BREAKERS_OPTION = `  --shared-breakers    share the app's breaker state (open, isolated, closed) with every process on the store,
                       read every second (default: $BREAKWATER_SHARED_BREAKERS=1, else each process its own)`;

export const SERVE_USAGE = `Usage: breakwater serve [options]

Runs the gateway: the dashboard at / (admin API under /admin/api/), MCP (Streamable HTTP) at /mcp,
GET /jobs/:id, GET /jobs/:id/events (SSE), POST /jobs/:id/cancel, /healthz, /readyz and /metrics, plus a
worker for the app's jobs. Stops gracefully on SIGINT/SIGTERM (running jobs finish or are released within
--grace-ms); signals within 500 ms of the first are the same request, a later one exits at once.

Who may call (docs/security.md): with no credential configured, only clients on this machine. With
BREAKWATER_ADMIN_TOKEN (at least 16 characters) or API keys ('breakwater keys create'), every route but the
probes and signed webhooks needs one, as Authorization: Bearer <key or token>.

Retention (docs/operations-guide.md): every 5 minutes ($BREAKWATER_PRUNE_EVERY) the gateway removes finished
jobs after 7 days ($BREAKWATER_RETAIN_JOBS), dead letters after 30 ($BREAKWATER_RETAIN_DEAD_LETTERS), webhook
deliveries 7 days after their job finished ($BREAKWATER_RETAIN_WEBHOOKS), stream events after an hour
($BREAKWATER_RETAIN_STREAM_EVENTS), settled operations after 30 days ($BREAKWATER_RETAIN_OPERATIONS) and
expired idempotency records; durations such as 90s, 30m, 12h, 7d, or forever. See 'breakwater prune --help'.

Options:
  --host <host>        interface to listen on (default: $BREAKWATER_HOST, then ${GATEWAY_DEFAULTS.host})
  --port <port>        port (default: $PORT, then ${GATEWAY_DEFAULTS.port})
  --public-url <url>   base URL clients reach the gateway at (default: http://<host>:<port>)
  --no-worker          do not run jobs here (run 'breakwater worker' processes instead)
  --log                JSON logs on stdout (pino), the operator's notices included (without it they are
                       printed as text lines)
  --grace-ms <ms>      shutdown grace for in-flight requests and running jobs (default ${GATEWAY_DEFAULTS.graceMs})
  --request-timeout-ms <ms>
                       how long a request may take before the server answers 504 for it (default
                       ${SERVER_DEFAULTS.requestTimeoutMs}; the AI route has its own, 10 minutes)
  --lease-ms <ms>      how long a job whose worker died waits before another worker takes it (default 30000)
  --allowed-hosts <names>
                       host names the gateway answers to besides IP addresses, localhost and the public URL's,
                       comma-separated (default: $BREAKWATER_ALLOWED_HOSTS); any other Host gets 403
  --allowed-origins <origins>
                       browser origins accepted besides this machine's pages and the gateway's own
                       (default: $BREAKWATER_ALLOWED_ORIGINS)
  --trusted-proxies <addresses>
                       proxies whose X-Forwarded-For/-Proto are believed, IPs or CIDRs, comma-separated
                       (default: $BREAKWATER_TRUSTED_PROXIES)
  --insecure-no-auth   serve anyone without a credential (without it, a gateway with no credential
                       configured serves this machine only and will not listen on another interface)
${SHARED_BREAKERS_OPTION}
${COMMON_OPTIONS}`;

export const WORKER_USAGE = `Usage: breakwater worker [options]

Runs a worker only: claims and runs the app's jobs from the store, no HTTP. Stops on SIGINT/SIGTERM after
running jobs finish (up to the grace period, then they are released); signals within 500 ms of the first are
the same request, a later one exits at once.

Options:
  --public-url <url>   the gateway's base URL, for job links the app builds (default: $BREAKWATER_PUBLIC_URL)
  --grace-ms <ms>      shutdown grace for running jobs (default ${GATEWAY_DEFAULTS.graceMs})
  --lease-ms <ms>      how long a job whose worker died waits before another worker takes it (default 30000)
${SHARED_BREAKERS_OPTION}
${COMMON_OPTIONS}`;

type Values = Record<string, string | boolean | undefined>;

function parse(
  argv: string[],
  usage: string,
  extra: NonNullable<ParseArgsConfig['options']>,
): { values: Values } {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: false,
      allowNegative: true,
      strict: true,
      options: {
        app: { type: 'string' },
        db: { type: 'string' },
        'grace-ms': { type: 'string' },
        'lease-ms': { type: 'string' },
        'public-url': { type: 'string' },
        'shared-breakers': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        ...extra,
      },
    }) as { values: Values };
  } catch (error) {
    throw new CliError(`${(error as Error).message}\n\n${usage}`, EXIT.usage);
  }
}

function integer(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < min || number > max) {
    throw new CliError(`${name} must be an integer from ${min} to ${max}, got '${value}'`, EXIT.usage);
  }
  return number;
}

/**
 * `--shared-breakers` / `--no-shared-breakers`, else $BREAKWATER_SHARED_BREAKERS: `1` or `true` on, `0`,
 * `false` or unset off.
 */
function sharedBreakers(flag: string | boolean | undefined): boolean {
  if (typeof flag === 'boolean') return flag;
  const value = process.env.BREAKWATER_SHARED_BREAKERS ?? '';
  if (value === '1' || value === 'true') return true;
  if (value === '' || value === '0' || value === 'false') return false;
  throw new CliError(`BREAKWATER_SHARED_BREAKERS must be 1 or 0, got '${value}'`, EXIT.usage);
}

async function appFrom(flag: string | undefined, usage: string) {
  const path = flag ?? process.env.BREAKWATER_APP;
  if (path === undefined || path === '') {
    throw new CliError(`an app module is needed: --app <module> or $BREAKWATER_APP\n\n${usage}`, EXIT.usage);
  }
  try {
    return await loadApp(path);
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}

/** Runs `breakwater serve`; resolves with the exit code once the gateway has shut down. */
export async function runServe(argv: string[], out: (line: string) => void = console.log): Promise<number> {
  const { values } = parse(argv, SERVE_USAGE, {
    host: { type: 'string' },
    port: { type: 'string' },
    worker: { type: 'boolean', default: true },
    log: { type: 'boolean' },
    'request-timeout-ms': { type: 'string' },
    'allowed-hosts': { type: 'string' },
    'allowed-origins': { type: 'string' },
    'trusted-proxies': { type: 'string' },
    'insecure-no-auth': { type: 'boolean' },
  });
  if (values.help === true) {
    out(SERVE_USAGE);
    return EXIT.ok;
  }
  const host = (values.host as string | undefined) ?? process.env.BREAKWATER_HOST ?? GATEWAY_DEFAULTS.host;
  const port =
    integer('--port', (values.port as string | undefined) ?? process.env.PORT, 0, 65_535) ??
    GATEWAY_DEFAULTS.port;
  const graceMs = integer('--grace-ms', values['grace-ms'] as string | undefined, 0, 600_000);
  const requestTimeoutMs = integer(
    '--request-timeout-ms',
    values['request-timeout-ms'] as string | undefined,
    1,
    2_147_483_647,
  );
  const leaseMs = integer('--lease-ms', values['lease-ms'] as string | undefined, 3, 3_600_000);
  const shared = sharedBreakers(values['shared-breakers']);
  const app = await appFrom(values.app as string | undefined, SERVE_USAGE);
  const db = storeUrl(values.db as string | undefined);
  const store = await openStoreForCli(db);
  let gateway;
  try {
    gateway = await startGateway({
      app,
      store,
      host,
      port,
      publicUrl: (values['public-url'] as string | undefined) ?? process.env.BREAKWATER_PUBLIC_URL,
      worker: values.worker !== false,
      logger: values.log === true,
      graceMs,
      requestTimeoutMs,
      leaseMs,
      sharedBreakers: shared,
      insecureNoAuth: values['insecure-no-auth'] === true,
      allowedHosts: commaList(values['allowed-hosts']),
      allowedOrigins: commaList(values['allowed-origins']),
      trustedProxies: commaList(values['trusted-proxies']),
      log: out,
    });
  } catch (error) {
    await store.close();
    throw startError(error, host, port);
  }
  const wildcard = host === '0.0.0.0' || host === '::';
  out(
    wildcard
      ? `breakwater: gateway listening on every interface (${host}); from this machine: ${gateway.url}`
      : `breakwater: gateway listening at ${gateway.url}`,
  );
  out(
    `  dashboard      ${gateway.dashboardUrl}${gateway.adminMode === 'token' ? ' (admin token required: BREAKWATER_ADMIN_TOKEN)' : ' (this machine only: set BREAKWATER_ADMIN_TOKEN to open it to others)'}`,
  );
  out(`  auth           ${gateway.authSummary}`);
  out(`  MCP endpoint   ${gateway.mcpUrl}`);
  out(`  tools          ${gateway.toolNames.join(', ') || '(none)'}`);
  // The app's own routes, one a line (behind the same auth as the MCP endpoint unless they say otherwise).
  gateway.appRoutes.forEach((route, i) => {
    const [method, path] = route.split(' ');
    out(`${i === 0 ? '  app routes' : ''}`.padEnd(17) + `${method} ${gateway.url}${path}`);
  });
  if (gateway.ai !== undefined) out(`  AI gateway     ${gateway.url}/v1/chat/completions`);
  out(`  metrics        ${gateway.url}/metrics`);
  const notes = [
    ...(values.worker === false ? [] : ['worker running']),
    ...(shared ? ['breakers shared'] : []),
  ];
  out(
    `  store          ${db ?? './data/breakwater.db'}${notes.length === 0 ? '' : ` (${notes.join(', ')})`}`,
  );
  await watchStopSignals({ out }).requested;
  await gateway.close();
  await store.close();
  out('breakwater: stopped');
  return EXIT.ok;
}

/** Runs `breakwater worker`; resolves with the exit code once the worker has shut down. */
export async function runWorker(argv: string[], out: (line: string) => void = console.log): Promise<number> {
  const { values } = parse(argv, WORKER_USAGE, {});
  if (values.help === true) {
    out(WORKER_USAGE);
    return EXIT.ok;
  }
  const graceMs = integer('--grace-ms', values['grace-ms'] as string | undefined, 0, 600_000);
  const leaseMs = integer('--lease-ms', values['lease-ms'] as string | undefined, 3, 3_600_000);
  const shared = sharedBreakers(values['shared-breakers']);
  const app = await appFrom(values.app as string | undefined, WORKER_USAGE);
  const db = storeUrl(values.db as string | undefined);
  const store = await openStoreForCli(db);
  let worker;
  try {
    worker = await startWorker({
      app,
      store,
      graceMs,
      leaseMs,
      sharedBreakers: shared,
      publicUrl: (values['public-url'] as string | undefined) ?? process.env.BREAKWATER_PUBLIC_URL,
      log: out,
    });
  } catch (error) {
    await store.close();
    throw startError(error);
  }
  out(`breakwater: worker running on ${db ?? './data/breakwater.db'}${shared ? ' (breakers shared)' : ''}`);
  await watchStopSignals({ out }).requested;
  await worker.close();
  await store.close();
  out('breakwater: stopped');
  return EXIT.ok;
}

/** A comma-separated flag as a list; undefined when the flag is absent (the environment then decides). */
function commaList(value: string | boolean | undefined): string[] | undefined {
  if (typeof value !== 'string') return undefined;
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** A start-up failure as a message that says what to do. */
function startError(error: unknown, host?: string, port?: number): CliError {
  const code = (error as { code?: unknown }).code;
  if (code === 'ERR_BREAKWATER_NO_AUTH') return new CliError((error as Error).message, EXIT.usage);
  if (code === 'ERR_BREAKWATER_APP_ROUTES') {
    return new CliError(`could not start: ${(error as Error).message}`, EXIT.usage);
  }
  if (code === 'EADDRINUSE') {
    return new CliError(
      `port ${port} on ${host} is in use: stop the other process or choose another port with --port (or PORT)`,
    );
  }
  if (code === 'EACCES' && port !== undefined && port < 1024) {
    return new CliError(
      `port ${port} needs privileges on this system: choose a port from 1024 up with --port`,
    );
  }
  return new CliError(`could not start: ${error instanceof Error ? error.message : String(error)}`);
}

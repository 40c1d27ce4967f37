/**
 * The gateway process of crash.test.ts: `node --import tsx test/webhooks/crash-server.ts '<config JSON>'`.
 * The ingress on the real server over the SQLite file the config names, with a worker whose handler writes
 * its effect, keyed by event id, to a side database (`effects`, at most one row per event; `handler_runs`,
 * every run). Prints `{"event":"listening","url":…}` on stdout once it listens, and never ends by itself:
 * the test SIGKILLs it. A safety timer ends it after 60 s should the test die first.
 */
import Database from 'better-sqlite3';
import { createJobs } from '../../src/jobs/index.js';
import { createServer } from '../../src/server/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import {
  createWebhookIngress,
  defineWebhookSource,
  onWebhook,
  stripeVerifier,
} from '../../src/webhooks/index.js';
import { STRIPE_SECRET } from './signing.js';

export interface CrashServerConfig {
  /** The store's SQLite file. */
  db: string;
  /** The side effects' SQLite file. */
  effects: string;
  leaseMs: number;
}

setTimeout(() => process.exit(3), 60_000).unref();

const config = JSON.parse(process.argv[2] ?? '') as CrashServerConfig;
const effects = new Database(config.effects, { timeout: 5_000 });
effects.pragma('journal_mode = WAL');
effects.exec(`
  CREATE TABLE IF NOT EXISTS effects (event_id TEXT PRIMARY KEY, pid INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS handler_runs (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);
`);
const logRun = effects.prepare('INSERT INTO handler_runs (event_id, attempt, pid) VALUES (?, ?, ?)');
const apply = effects.prepare(
  'INSERT INTO effects (event_id, pid) VALUES (?, ?) ON CONFLICT (event_id) DO NOTHING',
);
const perform = effects.transaction((eventId: string, attempt: number) => {
  logRun.run(eventId, attempt, process.pid);
  apply.run(eventId, process.pid);
});

const store = await openSqliteStore({ path: config.db });
const jobs = createJobs({ store, leaseMs: config.leaseMs, pollMs: 100 });
const ingress = createWebhookIngress({
  store,
  jobs,
  sources: [
    defineWebhookSource({
      name: 'payments',
      verifier: stripeVerifier({ secrets: [STRIPE_SECRET] }),
      concurrency: 8,
    }),
  ],
  // The documented pattern: the effect is idempotent on the event id, so a run repeated after a crash is harmless.
  handlers: [onWebhook('payments', '*', ({ eventId, attempt }) => void perform(eventId, attempt))],
});
const http = createServer({ jobs, store, routes: [ingress.routes] });
await http.listen({ host: '127.0.0.1', port: 0 });
const address = http.server.address();
const port = typeof address === 'object' && address !== null ? address.port : 0;
jobs.start();
process.stdout.write(
  `${JSON.stringify({ event: 'listening', url: `http://127.0.0.1:${port}`, pid: process.pid })}\n`,
);
setInterval(() => undefined, 1_000);

/**
 * Shared helpers of the webhook end-to-end tests (not a test file itself): the ingress mounted on the real
 * server (`createServer`) over a real jobs runtime and a SQLite store, listening on 127.0.0.1; signing as the
 * senders do (Stripe with node:crypto, Standard Webhooks with the official library); a cleanup stack.
 */
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import { STRIPE_SECRET, stripeSignature } from './signing.js';
import { createJobs, type Jobs } from '../../src/jobs/index.js';
import { closeGracefully, createServer } from '../../src/server/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { type JobRecord, type Store } from '../../src/store/index.js';
import {
  createWebhookIngress,
  type WebhookIngress,
  type WebhookIngressOptions,
} from '../../src/webhooks/index.js';
import { tempDb as sharedTempDb } from '../support/cleanups.js';

export { useCleanups } from '../support/cleanups.js';

/** A fresh temporary SQLite path, its folder removed after the test. */
export function tempDb(defer: (cleanup: () => unknown) => void): string {
  return sharedTempDb(defer, 'breakwater-webhooks');
}

export interface Running {
  url: string;
  store: Store;
  jobs: Jobs;
  ingress: WebhookIngress;
  http: FastifyInstance;
}

/**
 * Starts the ingress on the real server, a worker (started unless `worker: false`) and a store (a temp SQLite
 * file unless given), all closed after the test.
 */
export async function startIngress(
  defer: (cleanup: () => unknown) => void,
  options: Omit<WebhookIngressOptions, 'store' | 'jobs'> & {
    store?: Store;
    worker?: boolean;
    host?: string;
    requestTimeoutMs?: number;
  },
): Promise<Running> {
  const { store: given, worker = true, host = '127.0.0.1', requestTimeoutMs, ...rest } = options;
  const store = given ?? (await openSqliteStore({ path: tempDb(defer) }));
  if (given === undefined) defer(() => store.close());
  const jobs = createJobs({ store, pollMs: 50, leaseMs: 5_000 });
  defer(() => jobs.stop({ graceMs: 1_000 }));
  const ingress = createWebhookIngress({ ...rest, store, jobs });
  const http = createServer({ jobs, store, routes: [ingress.routes], requestTimeoutMs });
  defer(() => closeGracefully(http, { graceMs: 1_000 }));
  await http.listen({ host, port: 0 });
  const address = http.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  if (worker) jobs.start();
  return { url: `http://${host}:${port}`, store, jobs, ingress, http };
}

export { STRIPE_SECRET, stripeSignature } from './signing.js';

/** A Stripe-like event body. */
export function stripeEvent(
  id: string,
  type: string,
  object: Record<string, unknown> = {},
  created = Math.floor(Date.now() / 1000),
): string {
  return JSON.stringify({ id, object: 'event', type, created, data: { object } });
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

/** POSTs `body` to `url` with `headers` and reads the JSON answer. */
export async function post(
  url: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await request(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
  const text = await response.body.text();
  return {
    status: response.statusCode,
    headers: response.headers,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

/** Delivers a Stripe event to `/webhooks/<source>`, signed. */
export function deliverStripe(
  base: string,
  source: string,
  body: string | Buffer,
  secret = STRIPE_SECRET,
): Promise<Answer> {
  return post(`${base}/webhooks/${source}`, body, { 'stripe-signature': stripeSignature(body, secret) });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Reads `read` every 10 ms until `done` holds, or throws after `timeoutMs` with the last value. */
/**
 * Waits until there are `count` jobs of `type` and every one has finished (completed, failed or canceled);
 * resolves with them. After it, no handler of those jobs can run again, so run counts are final.
 */
export async function untilJobsFinished(store: Store, type: string, count: number): Promise<JobRecord[]> {
  return until(
    () => store.list({ type }),
    (jobs) =>
      jobs.length === count && jobs.every((job) => ['completed', 'failed', 'canceled'].includes(job.status)),
  );
}

export async function until<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met in time; last: ${JSON.stringify(value)}`);
    await sleep(10);
  }
}

/**
 * What every Redis test file shares: the server in BREAKWATER_TEST_REDIS_URL, a `describe` that skips with a
 * printed reason when it is unset, and a fresh key prefix per test whose keys are deleted after it, so tests
 * never see each other's keys (nor another run's) and leave nothing behind.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { afterEach, beforeEach, describe } from 'vitest';

/** The Redis server of the tests, or `''` when BREAKWATER_TEST_REDIS_URL is unset. */
export const TEST_REDIS_URL = process.env.BREAKWATER_TEST_REDIS_URL ?? '';

/** `describe`, or `describe.skip` after printing why `what` is skipped (no BREAKWATER_TEST_REDIS_URL). */
export function describeRedis(what: string): typeof describe.skip {
  if (TEST_REDIS_URL !== '') return describe;
  console.log(`Redis ${what} skipped: set BREAKWATER_TEST_REDIS_URL=redis://...`);
  return describe.skip;
}

/** The per-test keys and clients of a Redis suite; see {@link useRedis}. */
export interface RedisHarness {
  /** `bw_test:<suite>:<12 hex>:`, new for each test: prefix every key with it. */
  prefix: string;
  /** A client of the test server (another "instance" per call), closed after the test. */
  client(options?: RedisOptions): Redis;
}

/**
 * Registers `beforeEach` / `afterEach` that give each test a fresh key prefix, then delete every key under
 * it (SCAN + UNLINK) and close every client made by `client()`. Call inside a `describe`.
 */
export function useRedis(suite: string): RedisHarness {
  const clients: Redis[] = [];
  const harness: RedisHarness = {
    prefix: '',
    client(options = {}) {
      const client = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1, ...options });
      clients.push(client);
      return client;
    },
  };
  beforeEach(() => {
    harness.prefix = `bw_test:${suite}:${randomBytes(6).toString('hex')}:`;
  });
  afterEach(async () => {
    const admin = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      let cursor = '0';
      do {
        const [next, keys] = await admin.scan(cursor, 'MATCH', `${harness.prefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await admin.unlink(...keys);
        cursor = next;
      } while (cursor !== '0');
    } finally {
      await admin.quit();
      for (const client of clients.splice(0)) client.disconnect();
    }
  });
  return harness;
}

/** A loopback port nothing listens on (bound, then released), for clients of an unreachable Redis. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A client of an unreachable Redis (a closed loopback port) that fails fast: no offline queue, no retried
 * command, a short connect timeout, and its `error` events swallowed (no console noise). Disconnect it after.
 */
export async function unreachableRedis(options: RedisOptions = {}): Promise<Redis> {
  const client = new Redis({
    host: '127.0.0.1',
    port: await closedPort(),
    connectTimeout: 200,
    commandTimeout: 200,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => 100,
    ...options,
  });
  client.on('error', () => {});
  return client;
}

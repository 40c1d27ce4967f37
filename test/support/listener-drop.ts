/**
 * Dropping a PostgreSQL store's LISTEN connection on purpose, shared by the listener tests of store/ and
 * jobs/: `pg_terminate_backend` on exactly one listener, with its reconnect held back by a TCP proxy until the
 * test releases it, so "a notification sent while it is down" is deterministic rather than a race with the
 * reconnect backoff.
 */
import { connect, createServer, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { FakeClock } from '../../src/core/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { type Store } from '../../src/store/index.js';
import { eventually } from './eventually.js';
import { TEST_DATABASE_URL, testSchemas } from './postgres.js';

/** A TCP proxy to the test database that can hold new LISTEN connections (and only those) at connect. */
export interface ListenerGate {
  /** The test database URL through the proxy. */
  url: string;
  /** From now on, new listener connections wait (their startup packet held) until {@link release}. */
  hold(): void;
  /** Listener connections waiting now. */
  held(): number;
  /** Lets the waiting connections through; new ones pass again. */
  release(): void;
  /** Releases, stops accepting and destroys every proxied socket. */
  close(): Promise<void>;
}

/** Starts a {@link ListenerGate} on a free port of 127.0.0.1. */
export async function listenerGate(): Promise<ListenerGate> {
  const target = new URL(TEST_DATABASE_URL);
  let waiting: (() => void)[] | undefined;
  const sockets = new Set<Socket>();
  const track = (socket: Socket): Socket => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    return socket;
  };
  const server = createServer((client) => {
    track(client);
    client.once('data', (startup) => {
      client.pause(); // nothing may flow (and be lost) before the pipe is set up
      const pass = (): void => {
        if (client.destroyed) return;
        const upstream = track(connect(Number(target.port || 5432), target.hostname));
        upstream.on('close', () => client.destroy());
        client.on('close', () => upstream.destroy());
        upstream.write(startup);
        client.pipe(upstream).pipe(client);
      };
      // The startup packet carries application_name in clear text (the test database uses no TLS).
      if (waiting !== undefined && startup.includes('breakwater-listener')) waiting.push(pass);
      else pass();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(TEST_DATABASE_URL);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as { port: number }).port);
  const gate: ListenerGate = {
    url: proxied.toString(),
    hold: () => void (waiting ??= []),
    held: () => waiting?.length ?? 0,
    release() {
      const passes = waiting ?? [];
      waiting = undefined;
      for (const pass of passes) pass();
    },
    async close() {
      gate.release();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
  return gate;
}

/** What {@link listenerDrops} gives a suite. */
export interface ListenerDrops {
  /** The suite's clock: it never moves unless a test ticks it, so a consumer's poll never fires. */
  readonly clock: FakeClock;
  /** A fresh schema for the running test (dropped after it), without stores. */
  freshSchema(): Promise<string>;
  /**
   * A fresh schema with store A (through a {@link ListenerGate}) and store B (direct, another process) on
   * it, and each one's listener pid. Both are closed after the test.
   */
  twoProcesses(): Promise<{ a: Store; b: Store; pidA: number; pidB: number }>;
  /** Pids of the listener connections on the running test's schema only (other suites' are not ours). */
  listenerPids(): Promise<number[]>;
  /** `pg_terminate_backend` of the listener `pid`, matched by application_name, our schema and pid. */
  terminate(pid: number): Promise<void>;
  /** Terminates store A's listener with its reconnect held; resolves once that reconnect is waiting. */
  drop(pid: number): Promise<void>;
  /** Lets store A's held reconnect through. */
  release(): void;
  /** Retries `check` until it passes or 5 s of real time pass, letting FakeClock-driven promises settle. */
  eventually(check: () => void | Promise<void>): Promise<void>;
  /** Runs `cleanup` after the running test, before its stores close (last deferred first). */
  defer(cleanup: () => unknown): void;
}

/** The {@link ListenerDrops} of one suite; call it inside a `describe`. */
export function listenerDrops(prefix: string): ListenerDrops {
  const schemas = testSchemas(prefix);
  const clock = new FakeClock();
  let admin: pg.Client;
  let schema: string | undefined;
  let gate: ListenerGate | undefined;
  const stores: Store[] = [];
  const cleanups: (() => unknown)[] = [];

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
  });
  afterAll(() => admin.end());
  afterEach(async () => {
    gate?.release();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    for (const store of stores.splice(0)) await store.close();
    await gate?.close();
    gate = undefined;
    if (schema !== undefined) await schemas.drop(schema);
    schema = undefined;
  });

  const drops: ListenerDrops = {
    clock,
    async freshSchema() {
      return (schema = await schemas.create());
    },
    async twoProcesses() {
      const name = await drops.freshSchema();
      gate = await listenerGate();
      const a = await openPostgresStore({ url: gate.url, clock, schema: name });
      stores.push(a);
      const [pidA] = await drops.listenerPids();
      const b = await openPostgresStore({ url: TEST_DATABASE_URL, clock, schema: name });
      stores.push(b);
      const [pidB] = (await drops.listenerPids()).filter((pid) => pid !== pidA);
      expect(typeof pidA === 'number' && typeof pidB === 'number').toBe(true);
      return { a, b, pidA: pidA!, pidB: pidB! };
    },
    async listenerPids() {
      const { rows } = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
          WHERE application_name = 'breakwater-listener' AND query ILIKE $1 ORDER BY pid`,
        [`%LISTEN%${schema}%`],
      );
      return rows.map((row) => row.pid);
    },
    async terminate(pid) {
      const { rows } = await admin.query(
        `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
          WHERE application_name = 'breakwater-listener' AND query ILIKE $1 AND pid = $2`,
        [`%LISTEN%${schema}%`, pid],
      );
      expect(rows).toEqual([{ terminated: true }]);
    },
    async drop(pid) {
      gate!.hold();
      await drops.terminate(pid);
      await drops.eventually(async () => {
        expect(await drops.listenerPids()).not.toContain(pid);
        expect(gate!.held()).toBe(1);
      });
    },
    release: () => gate!.release(),
    eventually: (check) => eventually(clock, check),
    defer: (cleanup) => void cleanups.push(cleanup),
  };
  return drops;
}

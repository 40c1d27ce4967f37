/**
 * The proof "A route version deployed, then rolled back, under load, without a failed request": 20
 * clients send requests without pause (half of them streamed) through the official `openai` client while
 * another store connection, as another process would, deploys v2 and then rolls back to v1. The resolver
 * runs on a fake clock, so when it re-reads the store is exact: no request sees a deploy before the refresh
 * interval has passed on that clock, and every request that starts after it sees the new version.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { type Store } from '../../src/store/index.js';
import { FakeClock } from '../../src/core/index.js';
import { TEST_DATABASE_URL, describePostgres, testSchemas } from '../support/postgres.js';
import { routeGateway, step } from './routes-support.js';
import { ask, startSim, tempDb, until, useCleanups } from './support.js';

const defer = useCleanups();

const REFRESH_MS = 1_000;
const CLIENTS = 20;
/** Requests that start and end inside each phase before the next step is taken. */
const PER_PHASE = 100;
/** Real time each phase lasts at least, so the run is a few seconds of traffic. */
const PHASE_MS = 400;

interface Sample {
  start: number;
  end: number;
  stream: boolean;
  route: string | null;
  model: string | null;
  error: unknown;
}

/**
 * Runs the scenario: the gateway reads `gatewayStore`, deploys and rollbacks go through `adminStore`.
 * Phases: 0 v1 deployed · 1 v2 deployed, clock not advanced · 2 clock advanced by the refresh interval ·
 * 3 rolled back to v1, clock not advanced · 4 clock advanced again.
 */
async function deployUnderLoad(gatewayStore: Store, adminStore: Store): Promise<void> {
  const sim = await startSim(defer, { latencyMs: 2, tokensPerSecond: 500, completionTokens: 8 });
  const clock = new FakeClock();
  const v1 = await adminStore.routes.create('switch', step('v1', { model: 'model-v1' }), 'first');
  const v2 = await adminStore.routes.create('switch', step('v2', { model: 'model-v2' }), 'second');
  await adminStore.routes.deploy('switch', v1.version);
  const { client, logs } = await routeGateway(defer, { sim }, gatewayStore, {
    resolver: { clock, refreshMs: REFRESH_MS },
  });

  let phase = 0;
  let stopped = false;
  const samples: Sample[] = [];
  const runClient = async (n: number): Promise<void> => {
    const stream = n % 2 === 0;
    while (!stopped) {
      const sample: Sample = { start: phase, end: -1, stream, route: null, model: null, error: undefined };
      try {
        if (stream) {
          const { data, response } = await client.chat.completions
            .create({ ...ask('dynamic/switch'), stream: true })
            .withResponse();
          sample.route = response.headers.get('x-breakwater-route');
          sample.model = response.headers.get('x-breakwater-model');
          let text = '';
          for await (const chunk of data) text += chunk.choices[0]?.delta?.content ?? '';
          if (text.length === 0) throw new Error('empty stream');
        } else {
          const { data, response } = await client.chat.completions
            .create(ask('dynamic/switch'))
            .withResponse();
          sample.route = response.headers.get('x-breakwater-route');
          sample.model = response.headers.get('x-breakwater-model');
          if (!data.choices[0]?.message.content) throw new Error('empty answer');
        }
      } catch (error) {
        sample.error = error;
      }
      sample.end = phase;
      samples.push(sample);
    }
  };
  const clients = Array.from({ length: CLIENTS }, (_, n) => runClient(n));
  const settle = async (): Promise<void> => {
    await new Promise((resolve) => setTimeout(resolve, PHASE_MS));
    await until(
      () => samples.filter((s) => s.start === phase && s.end === phase).length >= PER_PHASE,
      15_000,
    );
  };

  try {
    await settle();
    await adminStore.routes.deploy('switch', v2.version);
    phase = 1;
    await settle();
    clock.tick(REFRESH_MS);
    phase = 2;
    await settle();
    await adminStore.routes.deploy('switch', v1.version); // the rollback
    phase = 3;
    await settle();
    clock.tick(REFRESH_MS);
    phase = 4;
    await settle();
  } finally {
    stopped = true;
    await Promise.all(clients);
  }

  const failed = samples.filter((s) => s.error !== undefined);
  expect(failed.map((s) => String(s.error))).toEqual([]);
  expect(logs.every((line) => line.status === 200 && line.outcome === 'ok')).toBe(true);
  expect(samples.length).toBeGreaterThanOrEqual(5 * PER_PHASE);
  expect(samples.some((s) => s.stream) && samples.some((s) => !s.stream)).toBe(true);

  // Each answer came from the version its route header names: a request in flight during a switch kept
  // the version it started with.
  for (const s of samples) {
    expect([
      ['switch@1', 'model-v1'],
      ['switch@2', 'model-v2'],
    ]).toContainEqual([s.route, s.model]);
  }
  // Phases 1 and 3: the store changed, but the refresh interval has not passed on the resolver's clock.
  const expected = ['switch@1', 'switch@1', 'switch@2', 'switch@2', 'switch@1'];
  for (let p = 0; p < expected.length; p++) {
    const inside = samples.filter((s) => s.start === p && s.end === p);
    expect(inside.length).toBeGreaterThanOrEqual(PER_PHASE);
    expect(new Set(inside.map((s) => s.route))).toEqual(new Set([expected[p]]));
  }
  // A request spanning a switch got the version before it or the one after.
  for (const s of samples.filter((x) => x.start !== x.end)) {
    expect([expected[s.start], expected[s.end]]).toContain(s.route);
  }
}

describe('routes: deploy and roll back under load', () => {
  it(
    'SQLite: zero failed requests; @1, then @2, then @1, each within the refresh interval',
    { timeout: 60_000 },
    async () => {
      const path = tempDb(defer, 'breakwater-routes');
      const gatewayStore = await openSqliteStore({ path });
      defer(() => gatewayStore.close());
      const adminStore = await openSqliteStore({ path }); // another connection, as another process
      defer(() => adminStore.close());
      await deployUnderLoad(gatewayStore, adminStore);
    },
  );
});

describePostgres('route deploys under load')('routes: deploy and roll back under load (PostgreSQL)', () => {
  const schemas = testSchemas('bw_routes_load');
  const stores: Store[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
  });

  it(
    'zero failed requests; @1, then @2, then @1, deployed from another connection',
    { timeout: 60_000 },
    async () => {
      const schema = await schemas.create();
      const gatewayStore = await openPostgresStore({ url: TEST_DATABASE_URL, schema });
      const adminStore = await openPostgresStore({ url: TEST_DATABASE_URL, schema });
      stores.push(gatewayStore, adminStore);
      await deployUnderLoad(gatewayStore, adminStore);
    },
  );
});

/**
 * The store-backed route resolver on a fake clock, on SQLite and PostgreSQL: what it reads and when (never
 * per request between refreshes), how a deploy from another connection reaches it, and what it does when
 * the store fails or a deployed definition is invalid.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createRouteResolver, type RouteFlow, type RouteResolverOptions } from '../../src/ai/routes/index.js';
import { BreakwaterError, FakeClock } from '../../src/core/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { type RouteStore, type Store } from '../../src/store/index.js';
import { TEST_DATABASE_URL, describePostgres, testSchemas } from '../support/postgres.js';
import { step } from './routes-support.js';
import { tempDb, useCleanups } from './support.js';
import { expectOptionsError } from '../support/options.js';

const defer = useCleanups();

/** Two stores on one database: the gateway's and another process's. */
type Open = () => Promise<{ mine: Store; other: Store }>;

/** `routes` with every call recorded, and a switch that makes every call fail. */
function watched(routes: RouteStore): { routes: RouteStore; calls: string[]; fail: { on: boolean } } {
  const calls: string[] = [];
  const fail = { on: false };
  const proxy = new Proxy(routes, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(property));
        if (fail.on) return Promise.reject(new Error('connection refused'));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { routes: proxy, calls, fail };
}

async function resolverOn(store: Store, options: Partial<RouteResolverOptions> = {}) {
  const clock = new FakeClock();
  const errors: unknown[] = [];
  const w = watched(store.routes);
  const resolver = createRouteResolver({
    routes: w.routes,
    clock,
    onError: (error) => void errors.push(error),
    ...options,
  });
  const resolve = async (name: string) => (await resolver.resolve(name, {})) as RouteFlow | undefined;
  return { clock, resolver, resolve, calls: w.calls, fail: w.fail, errors };
}

function resolverSuite(open: Open): void {
  it('reads a route on first use, then serves it from memory; the revision at most every refreshMs', async () => {
    const { mine } = await open();
    const v = await mine.routes.create('gifts', step('a'));
    await mine.routes.deploy('gifts', v.version);
    const { clock, resolve, calls } = await resolverOn(mine);

    const flow = await resolve('gifts');
    expect(flow).toMatchObject({ name: 'gifts', version: 1 });
    expect(calls).toEqual(['revision', 'heads', 'deployed']);
    for (let i = 0; i < 50; i++) expect(await resolve('gifts')).toBe(flow);
    clock.tick(999);
    expect(await resolve('gifts')).toBe(flow);
    expect(calls).toHaveLength(3); // nothing per request
    clock.tick(1);
    expect(await resolve('gifts')).toBe(flow);
    expect(calls.slice(3)).toEqual(['revision']); // unchanged: no other read
  });

  it('a deploy or rollback from another process takes effect once refreshMs has passed, not before', async () => {
    const { mine, other } = await open();
    const v1 = await other.routes.create('gifts', step('a'));
    const v2 = await other.routes.create('gifts', step('b'));
    await other.routes.deploy('gifts', v1.version);
    const { clock, resolve } = await resolverOn(mine, { refreshMs: 500 });
    const first = await resolve('gifts');
    expect(first?.version).toBe(1);

    await other.routes.deploy('gifts', v2.version);
    clock.tick(499);
    expect(await resolve('gifts')).toBe(first);
    clock.tick(1);
    expect((await resolve('gifts'))?.version).toBe(2);

    await other.routes.deploy('gifts', v1.version);
    expect((await resolve('gifts'))?.version).toBe(2);
    clock.tick(500);
    const back = await resolve('gifts');
    expect(back?.version).toBe(1);
    expect(back?.definition).toEqual(step('a'));
    // The first flow object is unchanged: a request that resolved it runs v1 to its end.
    expect(first?.version).toBe(1);
  });

  it('a draft changes nothing; invalidate() makes the next resolve check at once', async () => {
    const { mine, other } = await open();
    await other.routes.deploy('gifts', (await other.routes.create('gifts', step('a'))).version);
    const { resolver, resolve, calls } = await resolverOn(mine);
    const flow = await resolve('gifts');
    await other.routes.create('gifts', step('b')); // a draft: the revision moves, the deployed version not
    resolver.invalidate();
    expect(await resolve('gifts')).toBe(flow);
    expect(calls).toEqual(['revision', 'heads', 'deployed', 'revision', 'heads']);
  });

  it('unknown or undeployed names answer undefined from memory; they appear after the next check', async () => {
    const { mine, other } = await open();
    await other.routes.create('drafty', step('a'));
    const { clock, resolve, calls } = await resolverOn(mine);
    expect(await resolve('nope')).toBeUndefined();
    expect(await resolve('drafty')).toBeUndefined();
    for (let i = 0; i < 20; i++) expect(await resolve(`typo-${i}`)).toBeUndefined();
    expect(calls).toEqual(['revision', 'heads']);

    await other.routes.deploy('drafty', 1);
    expect(await resolve('drafty')).toBeUndefined();
    clock.tick(1_000);
    expect((await resolve('drafty'))?.version).toBe(1);
  });

  it('a store failure keeps cached routes serving; a route never read answers 503; then it recovers', async () => {
    const { mine, other } = await open();
    await other.routes.deploy('gifts', (await other.routes.create('gifts', step('a'))).version);
    await other.routes.deploy('other', (await other.routes.create('other', step('b'))).version);
    const { clock, resolve, fail, errors } = await resolverOn(mine);
    const flow = await resolve('gifts');

    fail.on = true;
    clock.tick(1_000);
    expect(await resolve('gifts')).toBe(flow);
    expect(errors).toHaveLength(1);
    const error = await resolve('other').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error).toMatchObject({ code: 'upstream_unavailable', status: 503 });

    fail.on = false;
    expect(await resolve('gifts')).toBe(flow); // the failed check is retried after refreshMs, not per request
    clock.tick(1_000);
    expect((await resolve('other'))?.version).toBe(1);
  });

  it('a deployed version with an invalid definition answers 500 until a valid one is deployed', async () => {
    const { mine, other } = await open();
    await other.routes.deploy(
      'gifts',
      (await other.routes.create('gifts', { type: 'model', name: 'a' })).version,
    );
    const { clock, resolve, errors } = await resolverOn(mine);
    const error = await resolve('gifts').catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'internal_error',
      status: 500,
      details: { reason: 'invalid_deployed_route', route: 'gifts@1' },
    });
    expect((error as Error).message).toContain('$.provider');
    expect(errors).toHaveLength(1);
    await resolve('gifts').catch(() => undefined);
    expect(errors).toHaveLength(1); // compiled once, not per request

    await other.routes.deploy('gifts', (await other.routes.create('gifts', step('a'))).version);
    clock.tick(1_000);
    expect((await resolve('gifts'))?.version).toBe(2);
  });

  it('refuses bad options with a RangeError naming them', () => {
    expect(() => createRouteResolver({ routes: {} as RouteStore })).toThrow(/routes must be a RouteStore/);
    expect(() => createRouteResolver({ routes: watched({} as RouteStore).routes, refreshMs: -1 })).toThrow(
      RangeError,
    );
    expectOptionsError(
      () =>
        createRouteResolver({
          routes: {} as RouteStore,
          refreshMs: 1.5,
          maxRequestCostUsd: 0,
          maxReservedShare: 2,
          onError: 'log' as never,
        }),
      {
        owner: 'createRouteResolver',
        options: ['routes', 'maxRequestCostUsd', 'maxReservedShare', 'refreshMs', 'onError'],
        message:
          'createRouteResolver: routes must be a RouteStore (store.routes), got an object; maxRequestCostUsd ' +
          'must be a finite number > 0, got 0; maxReservedShare must be a fraction in (0, 1], got 2; ' +
          "refreshMs must be an integer in [0, 3600000], got 1.5; onError must be a function, got 'log'",
      },
    );
  });
}

describe('route resolver (SQLite)', () => {
  resolverSuite(async () => {
    const path = tempDb(defer, 'breakwater-routes');
    const mine = await openSqliteStore({ path });
    const other = await openSqliteStore({ path });
    defer(() => Promise.all([mine.close(), other.close()]));
    return { mine, other };
  });
});

describePostgres('route resolver tests')('route resolver (PostgreSQL)', () => {
  const schemas = testSchemas('bw_routes_resolver');
  const stores: Store[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
  });
  resolverSuite(async () => {
    const schema = await schemas.create();
    const mine = await openPostgresStore({ url: TEST_DATABASE_URL, schema });
    const other = await openPostgresStore({ url: TEST_DATABASE_URL, schema });
    stores.push(mine, other);
    return { mine, other };
  });
});

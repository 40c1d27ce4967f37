/**
 * shareBreakerState across processes' stores: two PostgreSQL stores (each its own pool, as two processes
 * have) on one schema. The behaviour in detail is in `shared-breaker.test.ts` (SQLite).
 */
import { afterEach, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../core/index.js';
import { CircuitBreakerPolicy, ConsecutiveWindow } from '../policy/index.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { type Store } from '../store/index.js';
import { describePostgres, TEST_DATABASE_URL, testSchemas } from '../../test/support/postgres.js';
import { shareBreakerState, type SharedBreakerState } from './index.js';

const T0 = Date.UTC(2026, 0, 1);

/** A breaker that opens after 3 failures in a row, for 30 s. */
function breakerOn(clock: FakeClock): CircuitBreakerPolicy {
  return new CircuitBreakerPolicy({
    name: 'gift',
    window: new ConsecutiveWindow(3),
    openDurationMs: 30_000,
    clock,
  });
}

async function fail(breaker: CircuitBreakerPolicy, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await breaker.execute(() => Promise.reject(new BreakwaterError('upstream_unavailable'))).catch(() => {});
  }
}

describePostgres('shareBreakerState over PostgreSQL')(
  'shareBreakerState across two PostgreSQL stores',
  () => {
    const schemas = testSchemas('bw_shared_breaker');
    const stores: Store[] = [];
    const sharings: SharedBreakerState[] = [];

    afterEach(async () => {
      for (const sharing of sharings.splice(0)) sharing.dispose();
      for (const store of stores.splice(0)) await store.close();
    });

    it('(a) A opens on one store; B, on another store of the same schema, rejects after its refresh', async () => {
      const clock = new FakeClock(T0);
      const schema = await schemas.create();
      const storeA = await openPostgresStore({ url: TEST_DATABASE_URL, clock, schema });
      stores.push(storeA);
      const storeB = await openPostgresStore({ url: TEST_DATABASE_URL, clock, schema });
      stores.push(storeB);
      const a = breakerOn(clock);
      const b = breakerOn(clock);
      const sharedA = shareBreakerState(a, { store: storeA.counters, refreshMs: 1_000, clock });
      sharings.push(sharedA);
      const sharedB = shareBreakerState(b, { store: storeB.counters, refreshMs: 1_000, clock });
      sharings.push(sharedB);
      await sharedB.sync();

      clock.tick(400);
      await fail(a, 3);
      await sharedA.flush();
      expect(b.state().state).toBe('closed');
      await clock.tickAsync(600); // T0 + 1 000: B's refresh reads storeB
      await sharedB.sync(); // the refresh's read is a round trip: wait for one that surely ended
      let called = false;
      const error = await b.execute(() => (called = true)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BreakwaterError);
      expect([called, (error as BreakwaterError).code, (error as BreakwaterError).retryAfterMs]).toEqual([
        false,
        'circuit_open',
        29_400,
      ]);
      expect(b.state()).toMatchObject({ state: 'open', openedAt: T0 + 400, halfOpenAt: T0 + 30_400 });
    });
  },
);

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import type { Store } from '../store/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';
import { eventually } from '../../test/support/eventually.js';
import { RESOURCE_FEED_POLL_MS, ResourceUpdateFeed, type ResourceUpdate } from './resource-feed.js';

/**
 * The resource update feed between two store handles on one database (two gateways): what one publishes the
 * other hears once, after its anchor, with the poll driven by a fake clock; on SQLite and, with
 * BREAKWATER_TEST_DATABASE_URL, on PostgreSQL.
 */

interface Pair {
  first: Store;
  second: Store;
}

function feedContract(open: (clock: FakeClock) => Promise<Pair>): void {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('delivers each update once on both gateways, scoped ones with their principal', async () => {
    const clock = new FakeClock();
    const { first, second } = await open(clock);
    closers.push(
      () => first.close(),
      () => second.close(),
    );
    const a = new ResourceUpdateFeed({ store: first, clock });
    const b = new ResourceUpdateFeed({ store: second, clock });
    closers.push(
      () => a.close(),
      () => b.close(),
    );
    const heardA: ResourceUpdate[] = [];
    const heardB: ResourceUpdate[] = [];
    const remoteA: ResourceUpdate[] = [];
    a.consume((u) => void heardA.push(u));
    a.consume((u) => void remoteA.push(u), true);
    b.consume((u) => void heardB.push(u));
    // Published before b holds the feed: not b's to hear.
    a.publish({ uri: 'gift://early' });
    a.hold();
    b.hold();
    await a.ready();
    await b.ready();

    a.publish({ uri: 'gift://orders/1', principalId: 'key:ada' });
    b.publish({ uri: 'gift://stock' });
    await eventually(clock, async () => {
      await clock.tickAsync(RESOURCE_FEED_POLL_MS);
      expect(heardB).toHaveLength(2);
      expect(heardA).toHaveLength(3);
    });
    await clock.tickAsync(RESOURCE_FEED_POLL_MS * 3);
    expect(heardA).toEqual([
      { uri: 'gift://early' },
      { uri: 'gift://orders/1', principalId: 'key:ada' },
      { uri: 'gift://stock' },
    ]);
    expect(remoteA).toEqual([{ uri: 'gift://stock' }]);
    expect(heardB).toEqual([{ uri: 'gift://stock' }, { uri: 'gift://orders/1', principalId: 'key:ada' }]);
  });

  it('without a hold nothing is read; without a store updates stay local', async () => {
    const clock = new FakeClock();
    const local = new ResourceUpdateFeed({ clock });
    const heard: ResourceUpdate[] = [];
    local.consume((u) => void heard.push(u));
    local.hold();
    await local.ready();
    local.publish({ uri: 'gift://stock' });
    expect(heard).toEqual([{ uri: 'gift://stock' }]);
    local.close();
  });
}

describe('resource update feed on SQLite (two handles on one file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bw-feed-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  feedContract(async (clock) => {
    const path = join(dir, `store-${n++}.db`);
    return { first: await openSqliteStore({ path, clock }), second: await openSqliteStore({ path, clock }) };
  });
});

describePostgres('resource update feed tests')('resource update feed on PostgreSQL (two pools)', () => {
  const harness = postgresStoreHarness('bw_feed');
  afterAll(() => harness.cleanup());
  feedContract(async (clock) => {
    const first = await harness.open(clock);
    return { first, second: await harness.reopen(clock) };
  });
});

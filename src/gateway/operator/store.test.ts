/**
 * The store notice, probing a real SQLite store on a fake clock: unreachable once when probes start
 * failing (a closed store, or one that does not answer), reachable again once one answers.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.js';
import { openSqliteStore } from '../../store/sqlite/index.js';
import { type Store } from '../../store/index.js';
import { textNotices, watchOperatorEvents } from './index.js';

const NEXT =
  'work that needs it waits or fails (webhooks get 503, no job is claimed); checking again every 10 s';

describe('operator notices: the store', () => {
  it('unreachable when a probe fails, once; reachable again when one answers; a probe with no answer counts after 2 s', async () => {
    const clock = new FakeClock();
    let store: Store = await openSqliteStore({ path: ':memory:', clock });
    let answer: 'store' | 'never' = 'store';
    const lines: string[] = [];
    const watching = watchOperatorEvents({
      sink: textNotices((line) => lines.push(line), clock),
      clock,
      store: { get: (id) => (answer === 'store' ? store.get(id) : new Promise(() => undefined)) },
    });
    const probe = async () => {
      await clock.tickAsync(10_000);
      for (let i = 0; i < 5; i++) await clock.tickAsync(0);
    };

    await probe(); // 00:10, answered
    expect(lines).toEqual([]);
    await store.close();
    await probe(); // 00:20, the store is closed
    await probe(); // 00:30, still: no second line
    expect(lines).toEqual([
      `2026-01-01T00:00:20Z store unreachable (SQLite job store: the store is closed); ${NEXT}`,
    ]);
    store = await openSqliteStore({ path: ':memory:', clock });
    await probe(); // 00:40
    expect(lines.slice(1)).toEqual(['2026-01-01T00:00:40Z store reachable again after 20 s']);

    answer = 'never';
    await probe(); // 00:50: the probe starts and hangs
    expect(lines).toHaveLength(2);
    await clock.tickAsync(2_000);
    expect(lines.slice(2)).toEqual([
      `2026-01-01T00:00:52Z store unreachable (no answer within 2 s); ${NEXT}`,
    ]);

    watching.dispose();
    expect(clock.pendingTimers()).toBe(0);
    await store.close();
  });
});

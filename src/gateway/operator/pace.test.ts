import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.js';
import { clip, duration, isoSecond, jsonNotices, textNotices, usd } from './lines.js';
import { Pacer, TrailingCount } from './pace.js';

describe('operator lines: formats', () => {
  it('durations, amounts, times and clipping as a person reads them', () => {
    expect([250, 999, 1_000, 2_500, 30_000, 59_949].map(duration)).toEqual([
      '250 ms',
      '999 ms',
      '1 s',
      '2.5 s',
      '30 s',
      '59.9 s',
    ]);
    expect([60_000, 90_000, 3_599_000, 3_600_000, 7_500_000].map(duration)).toEqual([
      '1 min',
      '1 min 30 s',
      '59 min 59 s',
      '1 h',
      '2 h 5 min',
    ]);
    expect([4_010_000, 800, 5_000_000, 0].map(usd)).toEqual(['4.01', '0.0008', '5', '0']);
    expect(isoSecond(Date.UTC(2026, 0, 1, 12, 0, 5, 999))).toBe('2026-01-01T12:00:05Z');
    expect([clip('abcdef', 6), clip('abcdefg', 6)]).toEqual(['abcdef', 'abcde…']);
  });

  it('text notices carry the time; JSON notices the event and fields, the sentence as the message', () => {
    const clock = new FakeClock();
    const lines: string[] = [];
    const calls: unknown[][] = [];
    const notice = {
      event: 'breaker_opened',
      level: 'warn' as const,
      text: 'breaker x opened',
      fields: { a: 1 },
    };
    textNotices((line) => lines.push(line), clock)(notice);
    const record = (level: string) => (fields: object, message: string) =>
      calls.push([level, fields, message]);
    jsonNotices({ info: record('info'), warn: record('warn'), error: record('error') })(notice);
    expect(lines).toEqual(['2026-01-01T00:00:00Z breaker x opened']);
    expect(calls).toEqual([['warn', { event: 'breaker_opened', a: 1 }, 'breaker x opened']]);
  });
});

describe('Pacer', () => {
  it('lets `burst` lines per key through, sums up the rest at the end of the interval, then starts afresh', () => {
    const clock = new FakeClock();
    const summaries: string[] = [];
    const pacer = new Pacer({
      clock,
      burst: 2,
      intervalMs: 60_000,
      summary: (key, held) => summaries.push(`${key}:${held}@${clock.now() - Date.UTC(2026, 0, 1)}`),
    });
    expect([pacer.allow('a'), pacer.allow('a'), pacer.allow('b')]).toEqual([true, true, true]);
    clock.tick(10_000);
    expect([pacer.allow('a'), pacer.allow('a'), pacer.allow('b')]).toEqual([false, false, true]);
    clock.tick(49_999);
    expect(summaries).toEqual([]);
    clock.tick(1);
    // 'b' held nothing back: no line for it.
    expect(summaries).toEqual(['a:2@60000']);
    expect(pacer.allow('a')).toBe(true);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('an event at the very end of an interval sums up the old one first; dispose clears the timers', () => {
    const clock = new FakeClock();
    const summaries: string[] = [];
    const pacer = new Pacer({
      clock,
      burst: 1,
      intervalMs: 1_000,
      summary: (key, held) => summaries.push(`${key}:${held}`),
    });
    pacer.allow('a');
    pacer.allow('a');
    expect(clock.pendingTimers()).toBe(1);
    pacer.dispose();
    expect(clock.pendingTimers()).toBe(0);
    clock.tick(5_000);
    expect(summaries).toEqual([]);
  });

  it('without a summary, held-back lines are dropped and no timer is armed', () => {
    const clock = new FakeClock();
    const pacer = new Pacer({ clock, burst: 1, intervalMs: 60_000 });
    expect([pacer.allow('a'), pacer.allow('a'), pacer.allow('a')]).toEqual([true, false, false]);
    expect(clock.pendingTimers()).toBe(0);
    clock.tick(60_000);
    expect(pacer.allow('a')).toBe(true);
  });
});

describe('TrailingCount', () => {
  it('counts the events of the last 60 one-second buckets', () => {
    const clock = new FakeClock();
    const count = new TrailingCount(60_000);
    count.add(clock.now());
    clock.tick(30_000);
    count.add(clock.now());
    count.add(clock.now());
    expect(count.count(clock.now())).toBe(3);
    clock.tick(29_999); // the first event's bucket is 59 buckets back: still counted
    expect(count.count(clock.now())).toBe(3);
    clock.tick(1);
    expect(count.count(clock.now())).toBe(2);
    clock.tick(30_000);
    expect(count.count(clock.now())).toBe(0);
    // A bucket reused after a full turn starts from zero.
    count.add(clock.now());
    expect(count.count(clock.now())).toBe(1);
  });
});

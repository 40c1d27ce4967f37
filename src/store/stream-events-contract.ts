import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import { STREAM_EVENT_RETENTION_MS, STREAM_EVENTS_PAGE_MAX, type StreamEventStore } from './stream-events.js';

/**
 * The stream event store contract suite: every rule in the docstrings of `store/stream-events.ts`, run
 * against each backend (both backends pass the same contract tests: docs/architecture.md#contract-suites).
 */

/** A stream event store that can be closed (both backends are). */
export type ClosableStreamEventStore = StreamEventStore & { close(): Promise<void> };

/** How the suite reaches one backend. */
export interface StreamEventStoreBackend {
  /** Opens a store on fresh, empty storage, reading time from `clock`; called once per test. */
  open(clock: FakeClock): Promise<ClosableStreamEventStore>;
  /** Opens another store on the storage the last {@link open} made (a restart of the process). */
  reopen(clock: FakeClock): Promise<ClosableStreamEventStore>;
  /** Runs after each test once the suite has closed its stores (drop a schema, delete a file). */
  cleanup?(): Promise<void>;
}

const EVENT_ID = /^([1-9][0-9]*)-([1-9][0-9]*)$/;

/** The stream number and seq of an id, as numbers. */
function parts(eventId: string): { stream: number; seq: number } {
  const match = EVENT_ID.exec(eventId);
  expect(match, `event id ${eventId}`).not.toBeNull();
  return { stream: Number(match![1]), seq: Number(match![2]) };
}

/** Declares the suite for one backend, named `name` in the test titles. */
export function streamEventStoreContract(name: string, backend: StreamEventStoreBackend): void {
  describe(`StreamEventStore contract: ${name}`, () => {
    let clock: FakeClock;
    let store: ClosableStreamEventStore;
    const extra: ClosableStreamEventStore[] = [];

    beforeEach(async () => {
      clock = new FakeClock();
      store = await backend.open(clock);
    });

    afterEach(async () => {
      for (const other of extra.splice(0)) await other.close();
      await (store as ClosableStreamEventStore | undefined)?.close();
      store = undefined as unknown as ClosableStreamEventStore;
      await backend.cleanup?.();
    });

    async function appendAll(streamId: string, messages: unknown[]): Promise<string[]> {
      const ids: string[] = [];
      for (const message of messages) ids.push(await store.appendStreamEvent(streamId, message));
      return ids;
    }

    it('append gives ids of one stream number whose seq counts from 1 in append order', async () => {
      const ids = await appendAll('s1', [{ a: 1 }, { a: 2 }, { a: 3 }]);
      const parsed = ids.map(parts);
      expect(new Set(parsed.map((p) => p.stream)).size).toBe(1);
      expect(parsed.map((p) => p.seq)).toEqual([1, 2, 3]);
      expect(ids).toEqual(parsed.map((p) => `${p.stream}-${p.seq}`));
    });

    it('replay after an id returns only the later events of that stream, in order, as appended', async () => {
      const messages = [
        {},
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1, total: 4 } },
        { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'héllo ✓ \u0000 end' }] } },
        [1, 'two', null, { nested: { deep: true } }],
        'a string',
        42.5,
        null,
      ];
      const ids = await appendAll('stream-a', messages);

      expect(await store.streamEventsAfter(ids[0]!)).toEqual({
        streamId: 'stream-a',
        events: ids.slice(1).map((eventId, i) => ({ eventId, message: messages[i + 1] })),
      });
      expect(await store.streamEventsAfter(ids[4]!)).toEqual({
        streamId: 'stream-a',
        events: [
          { eventId: ids[5], message: 42.5 },
          { eventId: ids[6], message: null },
        ],
      });
    });

    it('keeps the key order of a stored object', async () => {
      const [first] = await appendAll('order', [{}]);
      await store.appendStreamEvent('order', { jsonrpc: '2.0', id: 1, result: { z: 1, a: 2 } });
      const page = await store.streamEventsAfter(first!);
      expect(JSON.stringify(page!.events[0]!.message)).toBe(
        '{"jsonrpc":"2.0","id":1,"result":{"z":1,"a":2}}',
      );
    });

    it('a message without a JSON form (undefined) is stored as null', async () => {
      const [first, second] = await appendAll('u', [{}, undefined]);
      expect(await store.streamEventsAfter(first!)).toEqual({
        streamId: 'u',
        events: [{ eventId: second, message: null }],
      });
    });

    it('replay after the newest event returns the stream with no events', async () => {
      const ids = await appendAll('s', [{ n: 1 }, { n: 2 }]);
      expect(await store.streamEventsAfter(ids[1]!)).toEqual({ streamId: 's', events: [] });
    });

    it('an unknown or malformed id answers undefined', async () => {
      const [id] = await appendAll('s', [{ n: 1 }]);
      const { stream, seq } = parts(id!);
      for (const unknown of [
        `${stream}-${seq + 1}`, // not yet appended
        `${stream + 1000}-1`, // no such stream
        `0${stream}-${seq}`, // a second spelling of a real id
        `${stream}-0${seq}`,
        `${stream}-0`,
        `${stream}`,
        `${stream}-${seq}-1`,
        ` ${stream}-${seq}`,
        '',
        'abc',
        '99999999999999999999-1', // beyond exact numbers
      ]) {
        expect(await store.streamEventsAfter(unknown), unknown).toBeUndefined();
      }
    });

    it('two streams are isolated: interleaved appends replay per stream', async () => {
      const a: string[] = [];
      const b: string[] = [];
      for (let i = 0; i < 4; i++) {
        a.push(await store.appendStreamEvent('stream-a', { a: i }));
        b.push(await store.appendStreamEvent('stream-b', { b: i }));
      }
      expect(parts(a[0]!).stream).not.toBe(parts(b[0]!).stream);
      expect(b.map((id) => parts(id).seq)).toEqual([1, 2, 3, 4]);
      expect(await store.streamEventsAfter(a[0]!)).toEqual({
        streamId: 'stream-a',
        events: [1, 2, 3].map((i) => ({ eventId: a[i], message: { a: i } })),
      });
      expect(await store.streamEventsAfter(b[1]!)).toEqual({
        streamId: 'stream-b',
        events: [2, 3].map((i) => ({ eventId: b[i], message: { b: i } })),
      });
    });

    it('limit pages the events; 0 answers only the stream; the default is the maximum page', async () => {
      const ids = await appendAll(
        'paged',
        Array.from({ length: 6 }, (_, i) => ({ i })),
      );
      expect(await store.streamEventsAfter(ids[0]!, 2)).toEqual({
        streamId: 'paged',
        events: [
          { eventId: ids[1], message: { i: 1 } },
          { eventId: ids[2], message: { i: 2 } },
        ],
      });
      expect(await store.streamEventsAfter(ids[2]!, 2)).toEqual({
        streamId: 'paged',
        events: [
          { eventId: ids[3], message: { i: 3 } },
          { eventId: ids[4], message: { i: 4 } },
        ],
      });
      expect(await store.streamEventsAfter(ids[0]!, 0)).toEqual({ streamId: 'paged', events: [] });
      expect((await store.streamEventsAfter(ids[0]!))!.events).toHaveLength(5);
      expect(STREAM_EVENTS_PAGE_MAX).toBe(1000);
    });

    it('a page is at most STREAM_EVENTS_PAGE_MAX events, whatever limit asks', async () => {
      const first = await store.appendStreamEvent('long', { i: 0 });
      for (let i = 1; i <= STREAM_EVENTS_PAGE_MAX + 5; i++) await store.appendStreamEvent('long', { i });
      const page = await store.streamEventsAfter(first, STREAM_EVENTS_PAGE_MAX * 10);
      expect(page!.events).toHaveLength(STREAM_EVENTS_PAGE_MAX);
      expect(page!.events.at(-1)!.message).toEqual({ i: STREAM_EVENTS_PAGE_MAX });
    });

    it('concurrent appends to one stream get distinct, gapless seqs, replayed in seq order', async () => {
      const first = await store.appendStreamEvent('busy', { i: -1 });
      const ids = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.appendStreamEvent('busy', { i })),
      );
      const seqs = ids.map((id) => parts(id).seq);
      expect([...seqs].sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
      const page = await store.streamEventsAfter(first);
      expect(page!.events.map((e) => parts(e.eventId).seq)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 2),
      );
      // Each id replays the message its own append stored.
      const byId = new Map(page!.events.map((e) => [e.eventId, e.message]));
      ids.forEach((id, i) => expect(byId.get(id)).toEqual({ i }));
    });

    it('prune deletes events older than olderThanMs, keeps the rest, and counts the deleted', async () => {
      const old = await appendAll('s', [{ n: 0 }, { n: 1 }]);
      clock.tick(30 * 60_000);
      const middle = await store.appendStreamEvent('s', { n: 2 });
      clock.tick(30 * 60_000);
      const recent = await store.appendStreamEvent('s', { n: 3 });
      clock.tick(1);
      // Now: `old` are 60 min + 1 ms old, `middle` 30 min + 1 ms, `recent` 1 ms.
      expect(await store.pruneStreamEvents(60 * 60_000)).toBe(2);
      for (const id of old) expect(await store.streamEventsAfter(id)).toBeUndefined();
      expect(await store.streamEventsAfter(middle)).toEqual({
        streamId: 's',
        events: [{ eventId: recent, message: { n: 3 } }],
      });
      // An event exactly olderThanMs old is kept.
      expect(await store.pruneStreamEvents(30 * 60_000 + 1)).toBe(0);
      expect(await store.pruneStreamEvents(30 * 60_000)).toBe(1);
      expect(await store.streamEventsAfter(middle)).toBeUndefined();
      expect(await store.streamEventsAfter(recent)).toEqual({ streamId: 's', events: [] });
    });

    it('prune keeps events for STREAM_EVENT_RETENTION_MS (1 hour) by default', async () => {
      expect(STREAM_EVENT_RETENTION_MS).toBe(3_600_000);
      const id = await store.appendStreamEvent('s', { n: 0 });
      clock.tick(STREAM_EVENT_RETENTION_MS);
      expect(await store.pruneStreamEvents()).toBe(0);
      expect(await store.streamEventsAfter(id)).toEqual({ streamId: 's', events: [] });
      clock.tick(1);
      expect(await store.pruneStreamEvents()).toBe(1);
      expect(await store.streamEventsAfter(id)).toBeUndefined();
    });

    it('never reuses an id: a pruned stream appended again or a new stream gets a new number', async () => {
      const oldA = await appendAll('stream-a', [{ a: 0 }, { a: 1 }]);
      clock.tick(STREAM_EVENT_RETENTION_MS + 1);
      expect(await store.pruneStreamEvents()).toBe(2);
      // The stream with the highest number is gone: a new stream must not take its number back.
      const newB = await appendAll('stream-b', [{ b: 0 }, { b: 1 }]);
      const newA = await appendAll('stream-a', [{ a: 2 }, { a: 3 }]);
      const numbers = [oldA, newB, newA].map((ids) => parts(ids[0]!).stream);
      expect(new Set(numbers).size).toBe(3);
      expect(newB.concat(newA).some((id) => oldA.includes(id))).toBe(false);
      expect(await store.streamEventsAfter(oldA[0]!)).toBeUndefined();
      expect(await store.streamEventsAfter(newA[0]!)).toEqual({
        streamId: 'stream-a',
        events: [{ eventId: newA[1], message: { a: 3 } }],
      });
    });

    it('rejects a bad stream id or prune age, changing nothing', async () => {
      await expect(store.appendStreamEvent('', {})).rejects.toThrow(TypeError);
      await expect(store.appendStreamEvent('a\u0000b', {})).rejects.toThrow(TypeError);
      await expect(store.pruneStreamEvents(-1)).rejects.toThrow(RangeError);
      await expect(store.pruneStreamEvents(Number.NaN)).rejects.toThrow(RangeError);
      // The next append is still seq 1 of the first stream.
      expect(parts(await store.appendStreamEvent('ok', {})).seq).toBe(1);
    });

    it('a message that cannot be serialized rejects and writes nothing', async () => {
      const first = await store.appendStreamEvent('s', { n: 0 });
      await expect(store.appendStreamEvent('s', { big: 1n })).rejects.toThrow(TypeError);
      const next = await store.appendStreamEvent('s', { n: 1 });
      expect(parts(next).seq).toBe(2);
      expect(await store.streamEventsAfter(first)).toEqual({
        streamId: 's',
        events: [{ eventId: next, message: { n: 1 } }],
      });
    });

    it('events survive close and reopen; appends continue the seq', async () => {
      const ids = await appendAll('durable', [{ n: 0 }, { n: 1 }, { n: 2 }]);
      const other = await store.appendStreamEvent('other', { o: 0 });
      await store.close();

      const again = await backend.reopen(clock);
      extra.push(again);
      expect(await again.streamEventsAfter(ids[0]!)).toEqual({
        streamId: 'durable',
        events: [
          { eventId: ids[1], message: { n: 1 } },
          { eventId: ids[2], message: { n: 2 } },
        ],
      });
      expect(await again.streamEventsAfter(other)).toEqual({ streamId: 'other', events: [] });
      const next = await again.appendStreamEvent('durable', { n: 3 });
      expect(parts(next)).toEqual({ stream: parts(ids[0]!).stream, seq: 4 });
    });

    it('rejects every operation once closed', async () => {
      const id = await store.appendStreamEvent('s', {});
      await store.close();
      await expect(store.appendStreamEvent('s', {})).rejects.toThrow(/closed/);
      await expect(store.streamEventsAfter(id)).rejects.toThrow(/closed/);
      await expect(store.pruneStreamEvents()).rejects.toThrow(/closed/);
    });
  });
}

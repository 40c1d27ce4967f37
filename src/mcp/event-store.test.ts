import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock, OptionsError } from '../core/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type JobStore, type StreamEventStore } from '../store/index.js';
import { createDurableEventStore } from './event-store.js';

type Store = JobStore & StreamEventStore;

/** A JSON-RPC notification numbered `n`. */
function note(n: number): JSONRPCMessage {
  return { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `m${n}` } };
}

/** Replays after `eventId` and returns what `send` received, in order. */
async function replay(
  events: EventStore,
  eventId: string,
): Promise<{ streamId: string; sent: Array<[string, JSONRPCMessage]> }> {
  const sent: Array<[string, JSONRPCMessage]> = [];
  const streamId = await events.replayEventsAfter(eventId, {
    send: async (id, message) => {
      sent.push([id, message]);
    },
  });
  return { streamId, sent };
}

describe('createDurableEventStore', () => {
  let dir: string;
  let clock: FakeClock;
  let store: Store;
  const opened: Store[] = [];

  async function open(): Promise<Store> {
    const s = await openSqliteStore({ path: join(dir, 'store.db'), clock });
    opened.push(s);
    return s;
  }

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'breakwater-event-store-'));
    clock = new FakeClock();
    store = await open();
  });

  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('replays the messages stored after an event, in order, with their ids; names the stream', async () => {
    const events = createDurableEventStore(store, { scope: 'session-1' });
    const ids: string[] = [];
    for (let n = 0; n < 4; n++) ids.push(await events.storeEvent('stream-x', note(n)));
    expect(ids.map((id) => /^\d+-(\d+)$/.exec(id)?.[1])).toEqual(['1', '2', '3', '4']);

    expect(await replay(events, ids[1]!)).toEqual({
      streamId: 'stream-x',
      sent: [
        [ids[2], note(2)],
        [ids[3], note(3)],
      ],
    });
    expect(await replay(events, ids[3]!)).toEqual({ streamId: 'stream-x', sent: [] });
    expect(await events.getStreamIdForEventId!(ids[0]!)).toBe('stream-x');
  });

  it('keeps streams of one session apart', async () => {
    const events = createDurableEventStore(store, { scope: 'session-1' });
    const a0 = await events.storeEvent('a', note(0));
    const b0 = await events.storeEvent('b', note(100));
    const a1 = await events.storeEvent('a', note(1));
    const b1 = await events.storeEvent('b', note(101));
    expect(await replay(events, a0)).toEqual({ streamId: 'a', sent: [[a1, note(1)]] });
    expect(await replay(events, b0)).toEqual({ streamId: 'b', sent: [[b1, note(101)]] });
  });

  it('never replays the priming event (an empty object)', async () => {
    const events = createDurableEventStore(store, { scope: 'session-1' });
    const first = await events.storeEvent('req', note(0));
    const priming = await events.storeEvent('req', {} as JSONRPCMessage);
    const last = await events.storeEvent('req', note(1));
    expect(await replay(events, first)).toEqual({ streamId: 'req', sent: [[last, note(1)]] });
    // Its id is still a valid cursor.
    expect(await events.getStreamIdForEventId!(priming)).toBe('req');
    expect(await replay(events, priming)).toEqual({ streamId: 'req', sent: [[last, note(1)]] });
  });

  // The SDK names the standalone GET stream of every session `_GET_stream`.
  it('two sessions with the same stream id never see each other', async () => {
    const one = createDurableEventStore(store, { scope: 'session-1' });
    const two = createDurableEventStore(store, { scope: 'session-2' });
    const one0 = await one.storeEvent('_GET_stream', note(1));
    const two0 = await two.storeEvent('_GET_stream', note(2));
    const one1 = await one.storeEvent('_GET_stream', note(11));
    const two1 = await two.storeEvent('_GET_stream', note(22));

    expect(await replay(one, one0)).toEqual({ streamId: '_GET_stream', sent: [[one1, note(11)]] });
    expect(await replay(two, two0)).toEqual({ streamId: '_GET_stream', sent: [[two1, note(22)]] });
    // Another session's event id is unknown here: nothing is sent.
    expect(await one.getStreamIdForEventId!(two0)).toBeUndefined();
    const sent: string[] = [];
    const rejected = await one
      .replayEventsAfter(two0, { send: async (id) => void sent.push(id) })
      .catch((error: unknown) => error);
    expect(rejected).toBeInstanceOf(BreakwaterError);
    expect(rejected).toMatchObject({ code: 'not_found', status: 404, details: { event_id: two0 } });
    expect(sent).toEqual([]);
  });

  it('without a scope, each event store is its own namespace', async () => {
    const one = createDurableEventStore(store);
    const two = createDurableEventStore(store);
    const id = await one.storeEvent('_GET_stream', note(1));
    expect(await one.getStreamIdForEventId!(id)).toBe('_GET_stream');
    expect(await two.getStreamIdForEventId!(id)).toBeUndefined();
  });

  it('answers unknown and malformed ids as unknown', async () => {
    const events = createDurableEventStore(store, { scope: 'session-1' });
    await events.storeEvent('s', note(0));
    for (const id of ['9999-1', '1-2', 'nonsense', '']) {
      expect(await events.getStreamIdForEventId!(id), id).toBeUndefined();
      await expect(replay(events, id)).rejects.toMatchObject({ code: 'not_found' });
    }
  });

  it('replays a long stream page by page, without gaps or duplicates', async () => {
    const events = createDurableEventStore(store, { scope: 'session-1', replayPageSize: 2 });
    const ids: string[] = [];
    for (let n = 0; n < 7; n++) ids.push(await events.storeEvent('long', note(n)));
    expect(await replay(events, ids[0]!)).toEqual({
      streamId: 'long',
      sent: ids.slice(1).map((id, i) => [id, note(i + 1)]),
    });
    // A number of events that fills the last page exactly ends on an empty page.
    expect(await replay(events, ids[2]!)).toEqual({
      streamId: 'long',
      sent: ids.slice(3).map((id, i) => [id, note(i + 3)]),
    });
  });

  it('awaits each send before the next', async () => {
    const events = createDurableEventStore(store, { scope: 'session-1' });
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) ids.push(await events.storeEvent('s', note(n)));
    const log: string[] = [];
    await events.replayEventsAfter(ids[0]!, {
      send: async (id) => {
        log.push(`start ${id}`);
        await new Promise<void>((resolve) => setImmediate(resolve));
        log.push(`end ${id}`);
      },
    });
    expect(log).toEqual([`start ${ids[1]}`, `end ${ids[1]}`, `start ${ids[2]}`, `end ${ids[2]}`]);
  });

  it('finds its events again after the store is closed and reopened (same scope)', async () => {
    const before = createDurableEventStore(store, { scope: 'session-1' });
    const ids = [await before.storeEvent('s', note(0)), await before.storeEvent('s', note(1))];
    await store.close();

    const reopened = await open();
    const after = createDurableEventStore(reopened, { scope: 'session-1' });
    expect(await after.getStreamIdForEventId!(ids[0]!)).toBe('s');
    expect(await replay(after, ids[0]!)).toEqual({ streamId: 's', sent: [[ids[1], note(1)]] });
    const next = await after.storeEvent('s', note(2));
    expect(await replay(after, ids[1]!)).toEqual({ streamId: 's', sent: [[next, note(2)]] });
  });

  it('a pruned event is unknown', async () => {
    const events = createDurableEventStore(store, { scope: 'session-1' });
    const old = await events.storeEvent('s', note(0));
    clock.tick(60 * 60_000 + 1);
    const recent = await events.storeEvent('s', note(1));
    expect(await store.pruneStreamEvents()).toBe(1);
    expect(await events.getStreamIdForEventId!(old)).toBeUndefined();
    await expect(replay(events, old)).rejects.toMatchObject({ code: 'not_found' });
    expect(await replay(events, recent)).toEqual({ streamId: 's', sent: [] });
  });

  it('validates its options at creation', () => {
    expect(() => createDurableEventStore(store, { replayPageSize: 0 })).toThrow(
      'createDurableEventStore: replayPageSize must be an integer in [1, 1000], got 0',
    );
    expect(() => createDurableEventStore(store, { replayPageSize: 1001 })).toThrow(RangeError);
    expect(() => createDurableEventStore(store, { replayPageSize: 1.5 })).toThrow(RangeError);
    expect(() => createDurableEventStore(store, { scope: '' })).toThrow(
      "createDurableEventStore: scope must be a non-empty string, got ''",
    );
    let error: unknown;
    try {
      createDurableEventStore(store, { scope: 7 as never, replayPageSize: 1001 });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OptionsError);
    const e = error as OptionsError;
    expect([e.code, e.owner, e.problems.map((p) => [p.option, p.value])]).toEqual([
      'invalid_options',
      'createDurableEventStore',
      [
        ['scope', 7],
        ['replayPageSize', 1001],
      ],
    ]);
    expect(e.message).toBe(
      'createDurableEventStore: scope must be a non-empty string, got 7; replayPageSize must be an integer ' +
        'in [1, 1000], got 1001',
    );
  });
});

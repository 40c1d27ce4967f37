import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import { openStore } from './open.js';
import { openPostgresStore } from './postgres/index.js';
import { startPruner, type PrunedStore } from './pruner.js';
import { RETENTION_DEFAULTS, retentionPolicy } from './retention.js';
import { openSqliteStore } from './sqlite/index.js';
import { optionsRejectionOf, expectOptionsRejection } from '../../test/support/options.js';

/**
 * Every store component reports all its bad options in one OptionsError, before it opens or starts anything
 * (the PostgreSQL cases connect to nothing).
 */
describe('store options: every bad option at once, naming the component', () => {
  it('openSqliteStore', async () => {
    await expectOptionsRejection(
      () =>
        openSqliteStore({
          path: '',
          clock: {} as never,
          busyTimeoutMs: -1,
          watchMs: 1.5,
          checkpointWorker: 'yes' as never,
        }),
      {
        owner: 'openSqliteStore',
        options: ['path', 'clock', 'busyTimeoutMs', 'watchMs', 'checkpointWorker'],
        message:
          "openSqliteStore: path must be a non-empty string, got ''; clock must be a Clock with now(), " +
          'setTimeout() and clearTimeout(), got an object; busyTimeoutMs must be an integer >= 0, got -1; ' +
          "watchMs must be an integer >= 0, got 1.5; checkpointWorker must be a boolean, got 'yes'",
      },
    );
  });

  it('openPostgresStore', async () => {
    const e = await optionsRejectionOf(() =>
      openPostgresStore({ url: '', schema: 'x'.repeat(59), poolSize: 0 }),
    );
    expect([e.code, e.owner]).toEqual(['invalid_options', 'openPostgresStore']);
    expect(e.problems).toEqual([
      { option: 'url', rule: 'a non-empty string', value: '' },
      { option: 'schema', rule: 'a non-empty name of at most 58 bytes without NUL', value: 'x'.repeat(59) },
      { option: 'poolSize', rule: 'an integer >= 1', value: 0 },
    ]);
    await expect(openPostgresStore({ url: 'postgres://nowhere', schema: 'a\0b' })).rejects.toThrow(
      "openPostgresStore: schema must be a non-empty name of at most 58 bytes without NUL, got 'a\0b'",
    );
    // 58 bytes is the limit in bytes, not characters: 29 two-byte characters fit, 30 do not.
    await expect(openPostgresStore({ url: '', schema: 'é'.repeat(29) })).rejects.toThrow(
      "openPostgresStore: url must be a non-empty string, got ''",
    );
    const long = await optionsRejectionOf(() => openPostgresStore({ url: '', schema: 'é'.repeat(30) }));
    expect(long.problems.map((p) => p.option)).toEqual(['url', 'schema']);
  });

  it('openStore: url and clock here, the password masked; schema is the PostgreSQL store’s', async () => {
    const e = await optionsRejectionOf(() =>
      openStore({ url: 'mysql://root:pw@localhost/db', clock: { now: () => 0 } as never }),
    );
    expect([e.code, e.owner]).toEqual(['invalid_options', 'openStore']);
    expect(e.message).toBe(
      'openStore: clock must be a Clock with now(), setTimeout() and clearTimeout(), got an object; url ' +
        "must be postgres://…, postgresql://…, sqlite:<path> or a file path, got 'mysql://root:***@localhost/db'",
    );
    await expect(openStore({ url: 5 as never })).rejects.toThrow('openStore: url must be a string, got 5');
    await expect(openStore({ url: 'sqlite:' })).rejects.toThrow(
      "openStore: url must be a non-empty string, got ''",
    );
    await expect(openStore({ url: 'postgres://nowhere', schema: '' })).rejects.toThrow(
      "openPostgresStore: schema must be a non-empty name of at most 58 bytes without NUL, got ''",
    );
    // SQLite ignores the schema option, whatever it is.
    const store = await openStore({ url: ':memory:', schema: 7 as never, clock: new FakeClock() });
    await store.close();
  });

  it('startPruner', async () => {
    const e = await optionsRejectionOf(() =>
      startPruner({
        store: {} as PrunedStore,
        everyMs: 0,
        jitter: -0.5,
        retention: { jobsMs: 1.5, jobMs: 1, operationsMs: Infinity } as never,
        batchSize: 10_001,
        vacuum: 'full' as never,
        random: 0.5 as never,
        onError: 'log' as never,
      }),
    );
    expect([e.code, e.owner]).toEqual(['invalid_options', 'startPruner']);
    expect(e.problems).toEqual([
      { option: 'store', rule: 'a Store', value: {} },
      { option: 'everyMs', rule: 'a finite number > 0', value: 0 },
      { option: 'jitter', rule: 'a fraction in [0, 1]', value: -0.5 },
      { option: 'retention.jobsMs', rule: 'an integer >= 0 or Infinity', value: 1.5 },
      {
        option: 'retention.jobMs',
        rule: 'one of jobsMs, deadLettersMs, webhookInboxMs, streamEventsMs, operationsMs',
        value: 'jobMs',
      },
      { option: 'batchSize', rule: 'an integer in [1, 10000]', value: 10_001 },
      { option: 'vacuum', rule: 'one of auto, always, never', value: 'full' },
      { option: 'random', rule: 'a function', value: 0.5 },
      { option: 'onError', rule: 'a function', value: 'log' },
    ]);
    expect(e.message).toBe(
      'startPruner: store must be a Store, got an object; everyMs must be a finite number > 0, got 0; ' +
        'jitter must be a fraction in [0, 1], got -0.5; retention.jobsMs must be an integer >= 0 or ' +
        'Infinity, got 1.5; retention.jobMs must be one of jobsMs, deadLettersMs, webhookInboxMs, ' +
        "streamEventsMs, operationsMs, got 'jobMs'; batchSize must be an integer in [1, 10000], got 10001; " +
        "vacuum must be one of auto, always, never, got 'full'; random must be a function, got 0.5; " +
        "onError must be a function, got 'log'",
    );
  });

  it('retention.prune: every bad option at once, before anything is read', async () => {
    const store = await openSqliteStore({ path: ':memory:', clock: new FakeClock() });
    try {
      const e = await optionsRejectionOf(() =>
        store.retention.prune({
          now: -1,
          dryRun: 1 as never,
          batchSize: 0,
          retention: { webhookInboxMs: -Infinity },
          signal: {} as never,
        }),
      );
      expect([e.code, e.owner]).toEqual(['invalid_options', 'retention.prune']);
      expect(e.message).toBe(
        'retention.prune: now must be an integer >= 0, got -1; dryRun must be a boolean, got 1; batchSize ' +
          'must be an integer in [1, 10000], got 0; retention.webhookInboxMs must be an integer >= 0 or ' +
          'Infinity, got -Infinity; signal must be an AbortSignal, got an object',
      );
    } finally {
      await store.close();
    }
  });

  it('retentionPolicy: every bad retention at once, naming the caller; the rest over the defaults', async () => {
    const e = await optionsRejectionOf(() =>
      retentionPolicy('prune', { jobsMs: -1, deadLettersMs: '1d' as never, streamEventsMs: 60_000 }),
    );
    expect([e.code, e.owner]).toEqual(['invalid_options', 'prune']);
    expect(e.message).toBe(
      'prune: retention.jobsMs must be an integer >= 0 or Infinity, got -1; retention.deadLettersMs must be ' +
        "an integer >= 0 or Infinity, got '1d'",
    );
    expect(retentionPolicy('prune', { streamEventsMs: 60_000, jobsMs: undefined })).toEqual({
      ...RETENTION_DEFAULTS,
      streamEventsMs: 60_000,
    });
    expect(retentionPolicy('prune', undefined)).toEqual(RETENTION_DEFAULTS);
    expect(() => retentionPolicy('prune', 'week' as never)).toThrow(
      "prune: retention must be an object or left out, got 'week'",
    );
    // A key the policy has only by inheritance is not a retention either.
    expect(() => retentionPolicy('prune', JSON.parse('{"toString": 1}') as never)).toThrow(
      'prune: retention.toString must be one of jobsMs, deadLettersMs, webhookInboxMs, streamEventsMs, ' +
        "operationsMs, got 'toString'",
    );
  });
});

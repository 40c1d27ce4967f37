import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../core/index.js';
import type { OperationStore } from '../../store/index.js';
import { LEDGER_DEFAULTS } from './defaults.js';
import { OperationLedger } from './ledger.js';
import { expectOptionsError } from '../../../test/support/options.js';

const store = {
  begin: () => Promise.reject(new Error('not used')),
  get: () => Promise.resolve(undefined),
  update: () => Promise.resolve(undefined),
  list: () => Promise.resolve([]),
} as unknown as OperationStore;

describe('OperationLedger options', () => {
  it('applies the defaults: recovery checks every 5 s', () => {
    const clock = new FakeClock();
    const ledger = new OperationLedger({ store, clock });
    expect(LEDGER_DEFAULTS.checkEveryMs).toBe(5_000);
    const recover = vi.spyOn(ledger, 'recover').mockResolvedValue(undefined as never);
    const loop = ledger.startRecovery();
    clock.tick(4_999);
    expect(recover).toHaveBeenCalledTimes(0);
    clock.tick(1);
    expect(recover).toHaveBeenCalledTimes(1);
    loop.dispose();
  });

  it('reports every bad option at once, in one OptionsError', () => {
    expectOptionsError(
      () =>
        new OperationLedger({
          store: {} as OperationStore,
          actions: 'pay' as never,
          audit: { append() {} } as never,
          log: {} as never,
          checkEveryMs: 0,
        }),
      {
        owner: 'OperationLedger',
        options: ['store', 'actions', 'audit', 'log', 'checkEveryMs'],
        message:
          'OperationLedger: store must be an OperationStore, got an object; ' +
          "actions must be an array of actions, got 'pay'; " +
          'audit must be an audit log with record(), got an object; ' +
          'log must be a pino-compatible logger (info, warn or error methods), got an object; ' +
          'checkEveryMs must be a finite number > 0, got 0',
      },
    );
  });
});

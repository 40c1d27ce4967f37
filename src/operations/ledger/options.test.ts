import { describe, expect, it, vi } from 'vitest';
import { FakeClock, OptionsError } from '../../core/index.js';
import type { OperationStore } from '../../store/index.js';
import { LEDGER_DEFAULTS } from './defaults.js';
import { OperationLedger } from './ledger.js';

const store = {
  begin: () => Promise.reject(new Error('not used')),
  get: () => Promise.resolve(undefined),
  update: () => Promise.resolve(undefined),
  list: () => Promise.resolve([]),
} as unknown as OperationStore;

function optionsErrorOf(make: () => unknown): OptionsError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    return error as OptionsError;
  }
  throw new Error('expected an OptionsError');
}

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
    const error = optionsErrorOf(
      () =>
        new OperationLedger({
          store: {} as OperationStore,
          actions: 'pay' as never,
          audit: { append() {} } as never,
          log: {} as never,
          checkEveryMs: 0,
        }),
    );
    expect(error.message).toBe(
      'OperationLedger: store must be an OperationStore, got an object; ' +
        "actions must be an array of actions, got 'pay'; " +
        'audit must be an audit log with record(), got an object; ' +
        'log must be a pino-compatible logger (info, warn or error methods), got an object; ' +
        'checkEveryMs must be a finite number > 0, got 0',
    );
    expect(error.code).toBe('invalid_options');
    expect(error.owner).toBe('OperationLedger');
    expect(error.problems.map((p) => p.option)).toEqual(['store', 'actions', 'audit', 'log', 'checkEveryMs']);
  });
});

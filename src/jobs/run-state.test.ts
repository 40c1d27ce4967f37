import { describe, expect, it } from 'vitest';
import { BreakwaterError } from '../core/index.js';
import { abortOf, failureOf, RUNNING, stopRun, type RunState } from './run-state.js';

const shutdownReason = new BreakwaterError('canceled', { message: 'The worker is shutting down.' });
const timeoutReason = new BreakwaterError('timeout', { message: 'The job ran longer than its timeout.' });
const cancelReason = new BreakwaterError('canceled', { message: 'The job was canceled.' });
const lostReason = new BreakwaterError('canceled', { message: "The job's lease was lost to another run." });

describe('stopRun', () => {
  it('a stop of higher rank replaces a lower one and keeps the first abort', () => {
    const shut = stopRun(RUNNING, 'shutdown', shutdownReason, 1_000);
    const timed = stopRun(shut, 'timeout', timeoutReason, 2_000);
    const canceled = stopRun(timed, 'canceled', cancelReason, 3_000);
    expect(shut).toEqual({ kind: 'shutdown', abort: { at: 1_000, reason: shutdownReason } });
    expect(timed).toEqual({
      kind: 'timeout',
      abort: { at: 1_000, reason: shutdownReason },
      error: timeoutReason,
    });
    expect(canceled).toEqual({ kind: 'canceled', abort: { at: 1_000, reason: shutdownReason } });
    expect(abortOf(canceled)).toEqual({ at: 1_000, reason: shutdownReason });
  });

  it('a stop of equal or lower rank changes nothing', () => {
    const canceled = stopRun(RUNNING, 'canceled', cancelReason, 1_000);
    expect(stopRun(canceled, 'timeout', timeoutReason, 2_000)).toBe(canceled);
    expect(stopRun(canceled, 'shutdown', shutdownReason, 2_000)).toBe(canceled);
    expect(stopRun(canceled, 'canceled', cancelReason, 2_000)).toBe(canceled);
  });

  it('a loss outranks every stop and keeps the one it came on top of; nothing replaces it', () => {
    const timed = stopRun(RUNNING, 'timeout', timeoutReason, 1_000);
    const lost = stopRun(timed, 'lost', lostReason, 2_000);
    expect(lost).toEqual({ kind: 'lost', abort: { at: 1_000, reason: timeoutReason }, before: timed });
    expect(stopRun(lost, 'canceled', cancelReason, 3_000)).toBe(lost);
  });

  it('a settled run changes no more', () => {
    const settled: RunState = { kind: 'settled', stop: RUNNING };
    expect(stopRun(settled, 'canceled', cancelReason, 1_000)).toBe(settled);
    expect(stopRun(settled, 'lost', lostReason, 1_000)).toBe(settled);
    expect(abortOf(settled)).toBeUndefined();
  });
});

describe('failureOf', () => {
  const thrown = new Error('boom');
  /** The stop a run ends with, for a state built by `stopRun` before the run settled. */
  const stopOf = (state: RunState): Exclude<RunState, { kind: 'settled' }> => {
    if (state.kind === 'settled') throw new Error('settled');
    return state;
  };
  it('a canceled run failed with nothing, a timed-out one with its timeout, else what the handler threw', () => {
    const canceled = stopRun(RUNNING, 'canceled', cancelReason, 0);
    const timed = stopRun(RUNNING, 'timeout', timeoutReason, 0);
    const shut = stopRun(RUNNING, 'shutdown', shutdownReason, 0);
    expect(failureOf(stopOf(canceled), { ok: false, error: thrown })).toBeUndefined();
    expect(failureOf(stopOf(timed), { ok: true, value: 1 })).toBe(timeoutReason);
    expect(failureOf(stopOf(shut), { ok: false, error: thrown })).toBe(thrown);
    expect(failureOf(RUNNING, { ok: true, value: 1 })).toBeUndefined();
  });

  it('a lost run failed with what the stop before the loss says', () => {
    const timed = stopRun(RUNNING, 'timeout', timeoutReason, 0);
    const lostAfterTimeout = stopRun(timed, 'lost', lostReason, 1);
    const lostRunning = stopRun(RUNNING, 'lost', lostReason, 1);
    expect(failureOf(stopOf(lostAfterTimeout), { ok: false, error: thrown })).toBe(timeoutReason);
    expect(failureOf(stopOf(lostRunning), { ok: false, error: thrown })).toBe(thrown);
  });
});

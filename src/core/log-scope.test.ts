import { describe, expect, it } from 'vitest';
import { Log, LogContext, setLogger } from './log.js';

// Its own file: the tests below depend on this process never having seen a logger before them (vitest gives
// every test file its own module instances).
describe('LogContext.runDetached without a reader', () => {
  const logger = { info: () => {}, warn: () => {}, error: () => {} };

  it('runs without a scope while no logger was ever set and the fields carry nothing that travels', () => {
    expect(
      LogContext.runDetached({ job_id: 'j1', job_type: 'mail' }, () => LogContext.fields()),
    ).toBeUndefined();
  });

  it('enters the scope when the fields carry a correlation id, an operation id or a tool', () => {
    for (const fields of [{ correlation_id: 'c1' }, { operation_id: 'op1' }, { tool: 'search' }]) {
      expect(LogContext.runDetached({ job_id: 'j1', ...fields }, () => LogContext.fields())).toEqual({
        job_id: 'j1',
        ...fields,
      });
    }
  });

  it('inside an active scope, still detaches from it (the run does not inherit the request)', () => {
    const seen = LogContext.run({ correlation_id: 'request' }, () =>
      LogContext.runDetached({ job_id: 'j1' }, () => LogContext.fields()),
    );
    expect(seen).toEqual({ job_id: 'j1' });
  });

  it('enters the scope once a Log was given its own logger', () => {
    new Log(logger);
    expect(LogContext.runDetached({ job_id: 'j2' }, () => LogContext.fields())).toEqual({ job_id: 'j2' });
  });
});

describe('LogContext.runDetached with a process logger', () => {
  it('enters the scope once setLogger was called', () => {
    const disposable = setLogger({ info: () => {}, warn: () => {}, error: () => {} });
    try {
      expect(LogContext.runDetached({ job_id: 'j3' }, () => LogContext.fields())).toEqual({ job_id: 'j3' });
    } finally {
      disposable.dispose();
    }
  });
});

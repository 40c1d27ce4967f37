import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../store/index.js';
import { formatJob } from './jobs-command.js';

const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);

const job: JobRecord = {
  id: 'job_1',
  type: 'deep_analysis',
  status: 'pending',
  payload: { budget: 50 },
  result: null,
  error: {
    code: 'circuit_open',
    message: 'The gift service is temporarily unavailable after repeated failures; try again shortly.',
    kind: 'transient',
    retryAt: T0 + 20_000,
  },
  attempts: 1,
  maxAttempts: 3,
  runAt: T0 + 20_000,
  priority: 0,
  idempotencyKey: null,
  createdAt: T0,
  updatedAt: T0,
} as JobRecord;

describe('jobs show', () => {
  it("prints the stored error's retryAt as a time, not as epoch milliseconds", () => {
    const text = formatJob(job, []);
    expect(text.split('\n')).toContain(
      'error:     {"code":"circuit_open","message":"The gift service is temporarily unavailable after repeated failures; try again shortly.","kind":"transient","retryAt":"2030-01-01T12:00:20.000Z"}',
    );
    expect(text).toContain('run at:    2030-01-01T12:00:20.000Z');
  });

  it('prints an error without a wait as stored', () => {
    const { retryAt: _dropped, ...error } = job.error!;
    expect(formatJob({ ...job, error }, [])).toContain(
      'error:     {"code":"circuit_open","message":"The gift service is temporarily unavailable after repeated failures; try again shortly.","kind":"transient"}',
    );
  });
});

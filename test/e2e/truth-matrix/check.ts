/**
 * The assertions of one cell: what the model read (a tool result's `structuredContent.error`, or
 * `get_job_status`'s `error`) against the cell's expectation.
 */
import { expect } from 'vitest';
import { EXCLUSIVE_WORDS, SENTENCE_RULES, type Failure } from './expectations.js';

/** A failure as the model reads it (`ToolErrorInfo`). */
export interface ToldError {
  code: string;
  category: string;
  message: string;
  retryable: boolean;
  retry_after_ms: number | null;
  outcome: string;
  operation_id?: string;
  reconcile?: { method: string; path: string };
}

/**
 * Asserts `error` against `told`. `elapsedMs`: time (on the gateway's clock) since the wait could first
 * have started (the cell's start, or its job's last run), so a remaining wait must be within it of the full one.
 */
export function expectTold(error: ToldError, told: Failure, elapsedMs: number): void {
  expect({
    code: error.code,
    category: error.category,
    outcome: error.outcome,
    retryable: error.retryable,
  }).toEqual({ code: told.code, category: told.category, outcome: told.outcome, retryable: told.retryable });
  expectSentence(error.message, told, error.retry_after_ms);
  if (told.waitMs === null) {
    expect(error.retry_after_ms).toBeNull();
  } else {
    expect(error.retry_after_ms).not.toBeNull();
    expect(error.retry_after_ms!).toBeLessThanOrEqual(told.waitMs);
    expect(error.retry_after_ms!).toBeGreaterThanOrEqual(told.waitMs - Math.ceil(elapsedMs) - 1);
  }
  if (told.outcome === 'unknown') {
    expect(error.operation_id).toMatch(/^op_/);
    expect(error.reconcile).toEqual({
      method: 'GET',
      path: `/orders?idempotency_key=${error.operation_id}`,
    });
  }
}

/**
 * The sentence is of `told.kind`, says no other kind's words, and names the wait exactly when one is known:
 * the `retryAfterMs` the answer carries, rounded up to whole seconds.
 */
export function expectSentence(message: string, told: Failure, retryAfterMs: number | null): void {
  for (const pattern of SENTENCE_RULES[told.kind].must) expect(message).toMatch(pattern);
  for (const [word, kind] of EXCLUSIVE_WORDS) {
    if (kind !== told.kind) expect(message).not.toMatch(word);
  }
  const hint = /try again in about (\d+) seconds/.exec(message);
  if (told.waitMs === null) {
    expect(hint).toBeNull();
  } else {
    expect(hint, `"${message}" names the wait`).not.toBeNull();
    // The sentence may have been made a moment before `retry_after_ms` was read: a second at most apart.
    const seconds = Math.ceil((retryAfterMs ?? Number.NaN) / 1_000);
    expect(
      Number(hint![1]) - seconds,
      `"${message}" with retry_after_ms ${retryAfterMs}`,
    ).toBeGreaterThanOrEqual(0);
    expect(Number(hint![1]) - seconds).toBeLessThanOrEqual(1);
  }
}

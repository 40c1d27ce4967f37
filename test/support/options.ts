import { expect } from 'vitest';
import { OptionsError } from '../../src/core/index.js';

/** The OptionsError `make` throws; fails the test when it throws anything else or nothing. */
export function optionsErrorOf(make: () => unknown): OptionsError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    return error as OptionsError;
  }
  throw new Error('expected an OptionsError');
}

/**
 * The OptionsError `make` throws or its promise rejects with (for factories that validate asynchronously);
 * fails the test when it settles with anything else or resolves.
 */
export async function optionsRejectionOf(make: () => unknown): Promise<OptionsError> {
  try {
    await make();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    return error as OptionsError;
  }
  throw new Error('expected an OptionsError');
}

/** What {@link expectOptionsError} asserts: the owner, every bad option's path in order, and the message when given. */
export interface ExpectedOptionsError {
  readonly owner: string;
  readonly options: readonly string[];
  readonly message?: string;
}

/**
 * Asserts that `make` throws an OptionsError with code `invalid_options`, exactly `expected.owner`, exactly
 * the option paths `expected.options` (in order) and, when given, exactly `expected.message`; returns it
 * for further assertions.
 */
export function expectOptionsError(make: () => unknown, expected: ExpectedOptionsError): OptionsError {
  return assertOptionsError(optionsErrorOf(make), expected);
}

/** {@link expectOptionsError} for a factory that throws or rejects. */
export async function expectOptionsRejection(
  make: () => unknown,
  expected: ExpectedOptionsError,
): Promise<OptionsError> {
  return assertOptionsError(await optionsRejectionOf(make), expected);
}

function assertOptionsError(error: OptionsError, expected: ExpectedOptionsError): OptionsError {
  expect([error.code, error.owner, error.problems.map((p) => p.option)]).toEqual([
    'invalid_options',
    expected.owner,
    expected.options,
  ]);
  if (expected.message !== undefined) expect(error.message).toBe(expected.message);
  return error;
}

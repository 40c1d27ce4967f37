import { expect } from 'vitest';
import { BreakwaterError } from '../../core/index.js';
export { expectOptionsError, optionsErrorOf } from '../../../test/support/options.js';

/** The BreakwaterError `verify` throws; fails the test when it returns instead. */
export function rejectionOf(verify: () => unknown): BreakwaterError {
  try {
    verify();
  } catch (error) {
    expect(error).toBeInstanceOf(BreakwaterError);
    return error as BreakwaterError;
  }
  throw new Error('expected verify to reject');
}

/** The RangeError message a factory throws at construction; fails the test when it constructs. */
export function optionError(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(RangeError);
    return (error as Error).message;
  }
  throw new Error('expected a RangeError');
}

/** `invalid_signature` with the given reason and message, as a plain object for `toEqual`. */
export function invalid(scheme: string, reason: string, message: string): object {
  return { code: 'invalid_signature', status: 401, message, details: { scheme, reason } };
}

/** The fields of a rejection that tests compare. */
export function fieldsOf(error: BreakwaterError): object {
  return { code: error.code, status: error.status, message: error.message, details: error.details };
}

/** 2026-01-01T00:00:00Z in unix seconds: FakeClock's default start. */
export const T = Date.UTC(2026, 0, 1) / 1000;

/**
 * A JSON body whose bytes no serializer reproduces: an exponent number, non-ASCII text (2- and 4-byte UTF-8),
 * tabs, CRLF and doubled spaces.
 */
export const ODD_BODY = Buffer.from(
  '{ "id":"evt_1",\t"amount" : 1.0e+2,\r\n  "note": "Grüße aus Köln – 東京 🎁",  "tags":[ "a" ,"b" ] }\n',
  'utf8',
);

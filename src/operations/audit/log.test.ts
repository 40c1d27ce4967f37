import { describe, expect, it } from 'vitest';
import type { AuditStore } from '../../store/index.js';
import { createAuditLog } from './log.js';
import { optionsErrorOf } from '../../../test/support/options.js';

describe('createAuditLog options', () => {
  it('reports every bad option at once, in one OptionsError, never showing the key', () => {
    const error = optionsErrorOf(() =>
      createAuditLog({
        store: {} as AuditStore,
        hmacKey: 'short-secret',
        clock: { now: () => 0 } as never,
      }),
    );
    expect(error.message).toBe(
      'createAuditLog: store must be an AuditStore, got an object; ' +
        "hmacKey must be a string or bytes of at least 16 bytes, got '12 characters'; " +
        'clock must be a Clock with now(), setTimeout() and clearTimeout(), got an object',
    );
    expect(error.message).not.toContain('short-secret');
    expect(error.code).toBe('invalid_options');
    expect(error.owner).toBe('createAuditLog');
    expect(error.problems).toEqual([
      { option: 'store', rule: 'an AuditStore', value: {} },
      { option: 'hmacKey', rule: 'a string or bytes of at least 16 bytes', value: '12 characters' },
      {
        option: 'clock',
        rule: 'a Clock with now(), setTimeout() and clearTimeout()',
        value: error.problems[2]!.value,
      },
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import { LogContext } from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import {
  MASKED_TEXT_PATHS,
  REDACTED_FIELDS,
  REDACTED_HEADERS,
  resolveServerOptions,
  type ServerLoggerOptions,
  type ServerStore,
} from './options.js';

const jobs = { get: async () => undefined } as unknown as Jobs;
const store = { get: async () => undefined, events: async () => [] } as unknown as ServerStore;

type Mixin = (line: object, level: number, logger: unknown) => Record<string, unknown>;

function logger(given: boolean | ServerLoggerOptions): ServerLoggerOptions & { mixin: Mixin } {
  return resolveServerOptions({ jobs, store, logger: given }).logger as ServerLoggerOptions & {
    mixin: Mixin;
  };
}

describe("createServer's logger options", () => {
  it('redacts the credential headers and fields, with the given paths added', () => {
    const options = logger({ redact: ['body.card'] });
    const paths = (options.redact as { paths: string[] }).paths;
    for (const header of [
      'authorization',
      'cookie',
      'stripe-signature',
      'webhook-signature',
      'x-hub-signature-256',
    ]) {
      expect(REDACTED_HEADERS).toContain(header);
      expect(paths).toContain(`req.headers["${header}"]`);
      expect(paths).toContain(`*.headers["${header}"]`);
    }
    for (const field of REDACTED_FIELDS) expect(paths).toEqual(expect.arrayContaining([field, `*.${field}`]));
    expect(paths.at(-1)).toBe('body.card');
    for (const path of MASKED_TEXT_PATHS) expect(paths).toContain(path);
    expect(options).toMatchObject({ level: 'info' });
    const censor = (options.redact as { censor: (value: unknown, path: unknown[]) => unknown }).censor;
    expect(censor('Bearer x', ['req', 'headers', 'authorization'])).toBe('[redacted]');
    expect(censor('/jobs?token=t1&limit=2', ['req', 'url'])).toBe('/jobs?token=[redacted]&limit=2');
    expect(censor('failed with key sk-0123456789abcdef', ['err', 'message'])).toBe(
      'failed with key [redacted]',
    );
    expect(censor('x', [Symbol('s'), 'url'])).toBe('[redacted]');
  });

  it('a given censor replaces whole values; URLs and error texts are still masked, not replaced', () => {
    const options = logger({ redact: { paths: ['body.card'], censor: '***' } });
    const censor = (options.redact as { censor: (value: unknown, path: unknown[]) => unknown }).censor;
    expect(censor('4242', ['body', 'card'])).toBe('***');
    expect(censor('/a?api_key=k', ['req', 'url'])).toBe('/a?api_key=[redacted]');
    const fn = logger({ redact: { paths: [], censor: (_v: unknown, p: string[]) => `<${p.join('.')}>` } });
    const wrapped = (fn.redact as { censor: (value: unknown, path: unknown[]) => unknown }).censor;
    expect(wrapped('c', ['req', 'headers', 'cookie'])).toBe('<req.headers.cookie>');
  });

  it("the mixin adds the LogContext's fields in a new object each time; a given mixin still runs and wins", () => {
    const ours = logger(true).mixin;
    expect(ours({}, 30, undefined)).toEqual({});
    const inside = LogContext.run({ correlation_id: 'c1', tool: 'suggest' }, () => [
      ours({}, 30, undefined),
      ours({}, 30, undefined),
    ]);
    expect(inside[0]).toEqual({ correlation_id: 'c1', tool: 'suggest' });
    expect(inside[0]).not.toBe(inside[1]);

    const theirs = logger({ mixin: () => ({ tool: 'theirs', region: 'eu' }) }).mixin;
    expect(
      LogContext.run({ correlation_id: 'c1', tool: 'suggest' }, () => theirs({}, 30, undefined)),
    ).toEqual({
      correlation_id: 'c1',
      tool: 'theirs',
      region: 'eu',
    });
    expect(theirs({}, 30, undefined)).toEqual({ tool: 'theirs', region: 'eu' });
    expect(resolveServerOptions({ jobs, store }).logger).toBe(false);
  });
});

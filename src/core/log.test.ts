import { describe, expect, it } from 'vitest';
import { BreakwaterError } from './errors.js';
import { errorFields, getLogger, Log, LogContext, loggerOption, setLogger, type Logger } from './log.js';

function capture(): { logger: Logger; lines: [string, object, string][] } {
  const lines: [string, object, string][] = [];
  const at = (level: string) => (fields: object, message: string) =>
    void lines.push([level, fields, message]);
  return { logger: { info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

describe('LogContext', () => {
  it('nests: inner fields are added, an inner value replaces the outer one, undefined is ignored', () => {
    const seen = LogContext.run({ correlation_id: 'c1', tool: 'a' }, () =>
      LogContext.run({ tool: 'b', operation_id: 'op1', job_id: undefined }, () => LogContext.fields()),
    );
    expect(seen).toEqual({ correlation_id: 'c1', tool: 'b', operation_id: 'op1' });
    expect(LogContext.fields()).toBeUndefined();
  });

  it('runDetached drops the enclosing fields; the scope follows awaits and timers', async () => {
    const detached = LogContext.run({ correlation_id: 'c1' }, () =>
      LogContext.runDetached({ job_id: 'job_1' }, () => LogContext.fields()),
    );
    expect(detached).toEqual({ job_id: 'job_1' });
    const later = await LogContext.run({ correlation_id: 'c2' }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return LogContext.correlationId();
    });
    expect(later).toBe('c2');
  });
});

describe('Log', () => {
  it("merges the scope's fields under the line's own and writes through its own logger", () => {
    const { logger, lines } = capture();
    const log = new Log(logger);
    LogContext.run({ correlation_id: 'c1', tool: 'suggest' }, () => log.warn({ tool: 'other', n: 1 }, 'm'));
    log.error({ n: 2 }, 'outside');
    expect(lines).toEqual([
      ['warn', { correlation_id: 'c1', tool: 'other', n: 1 }, 'm'],
      ['error', { n: 2 }, 'outside'],
    ]);
  });

  it('falls back to the process logger, read at each line; setLogger disposes back to the previous one', () => {
    const log = new Log();
    expect(log.enabled('info')).toBe(false);
    log.info({}, 'dropped');
    const first = capture();
    const second = capture();
    const a = setLogger(first.logger);
    log.info({ n: 1 }, 'one');
    const b = setLogger(second.logger);
    log.info({ n: 2 }, 'two');
    b.dispose();
    log.info({ n: 3 }, 'three');
    a.dispose();
    a.dispose();
    expect(getLogger()).toBeUndefined();
    expect(first.lines.map((l) => l[2])).toEqual(['one', 'three']);
    expect(second.lines.map((l) => l[2])).toEqual(['two']);
  });

  it("asks isLevelEnabled, skips levels a partial logger lacks, and survives a logger's throw", () => {
    const lines: string[] = [];
    const log = new Log({
      warn: (_f, m) => void lines.push(m),
      isLevelEnabled: (level) => level !== 'info',
    });
    expect([log.enabled('info'), log.enabled('warn'), log.enabled('error')]).toEqual([false, true, false]);
    log.error({}, 'no error method');
    log.warn({}, 'kept');
    expect(lines).toEqual(['kept']);
    const broken = new Log({
      info() {
        throw new Error('disk full');
      },
    });
    expect(() => broken.info({}, 'x')).not.toThrow();
  });
});

describe('loggerOption', () => {
  it('accepts a full logger, a partial one only when asked, and names the option otherwise', () => {
    const { logger } = capture();
    expect(loggerOption('x', 'logger', undefined)).toBeUndefined();
    expect(loggerOption('x', 'logger', logger)).toBe(logger);
    expect(() => loggerOption('x', 'logger', { warn() {} })).toThrow(
      'x: logger must be a pino-compatible logger with info, warn and error methods, got',
    );
    expect(loggerOption('x', 'log', { warn() {} }, true)).toBeDefined();
    expect(() => loggerOption('x', 'log', {}, true)).toThrow(
      'x: log must be a pino-compatible logger (info, warn or error methods), got',
    );
    expect(() => setLogger('console' as never)).toThrow(RangeError);
  });
});

describe('errorFields', () => {
  it('masks credentials in the message and stack; a BreakwaterError has its code and no stack', () => {
    const foreign = Object.assign(
      new Error('GET https://bob:hunter2@api.example/x?api_key=k1 with Bearer abc.def'),
      {
        code: 'ECONNRESET',
      },
    );
    const fields = errorFields(foreign);
    expect(fields).toMatchObject({
      type: 'Error',
      code: 'ECONNRESET',
      message: 'GET https://[redacted]@api.example/x?api_key=[redacted] with Bearer [redacted]',
    });
    expect(fields.stack).toContain('Bearer [redacted]');
    expect(JSON.stringify(fields)).not.toMatch(/hunter2|k1|abc\.def/);
    expect(errorFields(new BreakwaterError('timeout'))).toEqual({
      type: 'BreakwaterError',
      code: 'timeout',
      message: new BreakwaterError('timeout').message,
    });
    expect(errorFields('token=1')).toEqual({ type: 'string', message: 'token=1' });
  });
});

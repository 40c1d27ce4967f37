import { INVALID_SPAN_CONTEXT, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { LogContext } from '../core/index.js';
import type { JobRecord } from '../store/index.js';
import { publicRecord, readCarrier, runParent, withCarrier, withoutCarrier } from './carrier.js';

/** A span with no trace (what the API's no-op tracer makes). */
const untraced = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
/** A span of a trace, as a propagated parent would be. */
const traced = trace.wrapSpanContext({
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  traceFlags: 1,
});

describe('the job carrier', () => {
  it('carries only what exists: nothing outside a scope and a trace, the log fields inside a scope', () => {
    const payload = { topic: 'kites' };
    expect(withCarrier(payload, untraced)).toBe(payload);
    const carried = LogContext.run({ correlation_id: 'c1', tool: 'analyse', job_id: 'ignored' }, () =>
      withCarrier(payload, untraced),
    );
    expect(carried).toEqual({ topic: 'kites', $breakwater: { correlation_id: 'c1', tool: 'analyse' } });
    expect(payload).toEqual({ topic: 'kites' });
  });

  it('with no propagator registered a traced span adds nothing (the API propagator is a no-op)', () => {
    expect(withCarrier({ a: 1 }, traced)).toEqual({ a: 1 });
  });

  it('leaves payloads that are not plain objects alone', () => {
    class Order {
      id = 1;
    }
    const order = new Order();
    LogContext.run({ correlation_id: 'c1' }, () => {
      expect(withCarrier([1, 2], untraced)).toEqual([1, 2]);
      expect(withCarrier('text', untraced)).toBe('text');
      expect(withCarrier(null, untraced)).toBeNull();
      expect(withCarrier(order, untraced)).toBe(order);
    });
  });

  it('reads back only well-typed members, and strips the key from payloads and records', () => {
    const stored = {
      topic: 'kites',
      $breakwater: { trace: { traceparent: 'tp', bad: 1 }, correlation_id: 7, tool: 'analyse' },
    };
    expect(readCarrier(stored)).toEqual({ trace: { traceparent: 'tp' }, tool: 'analyse' });
    expect(readCarrier({ $breakwater: 'x' })).toBeUndefined();
    expect(readCarrier(['x'])).toBeUndefined();
    expect(withoutCarrier(stored)).toEqual({ topic: 'kites' });
    const plain = { topic: 'kites' };
    expect(withoutCarrier(plain)).toBe(plain);

    const record = { id: 'job_1', payload: stored } as unknown as JobRecord;
    expect(publicRecord(record)).toEqual({ id: 'job_1', payload: { topic: 'kites' } });
    expect(record.payload).toBe(stored);
    const clean = { id: 'job_2', payload: plain } as unknown as JobRecord;
    expect(publicRecord(clean)).toBe(clean);
    expect(publicRecord(undefined)).toBeUndefined();
  });

  it('a run without a carried trace starts a new trace', () => {
    expect(runParent(undefined)).toBe(ROOT_CONTEXT);
    expect(runParent({ correlation_id: 'c1' })).toBe(ROOT_CONTEXT);
  });
});

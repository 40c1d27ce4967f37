import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BreakwaterError, fingerprint } from '../../core/index.js';
import { checkFingerprintFields, requestFingerprint } from './fingerprint.js';
import { defaultIdempotencyScope } from './scope.js';

describe('requestFingerprint', () => {
  const order = { method: 'POST', url: '/orders', body: { product_id: 'p1', quantity: 2 } };

  it('is SHA-256 of the canonical JSON of method, path and body by default', () => {
    expect(requestFingerprint(order)).toBe(
      fingerprint({ method: 'POST', path: '/orders', body: { product_id: 'p1', quantity: 2 } }),
    );
    expect(requestFingerprint(order)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('ignores the key order of the body, the case of the method and the query', () => {
    const same = { method: 'post', url: '/orders?trace=1', body: { quantity: 2, product_id: 'p1' } };
    expect(requestFingerprint(same)).toBe(requestFingerprint(order));
  });

  it('tells apart another body, path or method', () => {
    const base = requestFingerprint(order);
    expect(requestFingerprint({ ...order, body: { product_id: 'p1', quantity: 3 } })).not.toBe(base);
    expect(requestFingerprint({ ...order, url: '/orders/x' })).not.toBe(base);
    expect(requestFingerprint({ ...order, method: 'PUT' })).not.toBe(base);
  });

  it('counts the query when configured', () => {
    const a = requestFingerprint({ ...order, url: '/orders?a=1' }, { query: true });
    expect(a).toBe(fingerprint({ method: 'POST', path: '/orders', query: 'a=1', body: order.body }));
    expect(requestFingerprint({ ...order, url: '/orders?a=2' }, { query: true })).not.toBe(a);
  });

  it('counts only the listed body members', () => {
    const fields = { body: ['product_id'] };
    const a = requestFingerprint(order, fields);
    expect(a).toBe(fingerprint({ method: 'POST', path: '/orders', body: { product_id: 'p1' } }));
    expect(requestFingerprint({ ...order, body: { product_id: 'p1', quantity: 9, note: 'x' } }, fields)).toBe(
      a,
    );
    expect(requestFingerprint(order, { body: 'none' })).toBe(
      fingerprint({ method: 'POST', path: '/orders' }),
    );
  });

  it('counts the listed headers, absent ones as null', () => {
    const request = { ...order, headers: { 'x-tenant': 't1' } };
    expect(requestFingerprint(request, { headers: ['X-Tenant', 'x-region'] })).toBe(
      fingerprint({
        method: 'POST',
        path: '/orders',
        body: order.body,
        headers: { 'x-tenant': 't1', 'x-region': null },
      }),
    );
  });

  it('hashes a text or bytes body by its SHA-256', () => {
    const sha256 = createHash('sha256').update('hello').digest('hex');
    const expected = fingerprint({ method: 'POST', path: '/notes', body: { sha256 } });
    expect(requestFingerprint({ method: 'POST', url: '/notes', body: 'hello' })).toBe(expected);
    expect(requestFingerprint({ method: 'POST', url: '/notes', body: Buffer.from('hello') })).toBe(expected);
  });

  it('uses a function of the request when given one', () => {
    const fields = (r: { body?: unknown }): unknown => (r.body as { product_id: string }).product_id;
    expect(requestFingerprint(order, fields)).toBe(fingerprint('p1'));
  });

  it('rejects a body with no JSON form as invalid_payload', () => {
    expect(() => requestFingerprint({ ...order, body: { n: 1n } })).toThrow(BreakwaterError);
  });

  it('checks the option at construction, naming it', () => {
    expect(() => checkFingerprintFields('x', 'fields', { body: 'some' })).toThrow(
      "x: fields.body must be 'all', 'none' or an array of member names, got 'some'",
    );
    expect(() => checkFingerprintFields('x', 'fields', [])).toThrow(RangeError);
    expect(() => checkFingerprintFields('x', 'fields', { headers: [''] })).toThrow(RangeError);
    expect(() => checkFingerprintFields('x', 'fields', () => 1)).not.toThrow();
  });
});

describe('defaultIdempotencyScope', () => {
  it('is a SHA-256 of the Authorization value, never the value itself', () => {
    const scope = defaultIdempotencyScope({ headers: { authorization: 'Bearer sk_live_1' } });
    expect(scope).toBe(`token:${createHash('sha256').update('Bearer sk_live_1').digest('hex')}`);
    expect(scope).not.toContain('sk_live_1');
  });

  it('falls back to X-API-Key, then API-Key, each hashed under its own name', () => {
    const hash = (value: string) => createHash('sha256').update(value).digest('hex');
    expect(defaultIdempotencyScope({ headers: { 'x-api-key': 'k_c' } })).toBe(`x-api-key:${hash('k_c')}`);
    expect(defaultIdempotencyScope({ headers: { 'x-api-key': 'k_d' } })).toBe(`x-api-key:${hash('k_d')}`);
    expect(defaultIdempotencyScope({ headers: { 'api-key': 'k_e' } })).toBe(`api-key:${hash('k_e')}`);
    expect(defaultIdempotencyScope({ headers: { authorization: 'Bearer a', 'x-api-key': 'k_c' } })).toBe(
      `token:${hash('Bearer a')}`,
    );
  });

  it('is anonymous without a credential', () => {
    expect(defaultIdempotencyScope({ headers: {} })).toBe('anonymous');
    expect(defaultIdempotencyScope({ headers: { authorization: '' } })).toBe('anonymous');
  });
});

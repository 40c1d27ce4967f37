import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.js';
import { hmacVerifier } from './hmac.js';
import { hmacSignatureHeader } from './sign.js';
import { T, fieldsOf, invalid, optionError, expectOptionsError, rejectionOf } from './test-support.js';

const SECRET = 'shared-secret-2026';
const body = Buffer.from('{"event":"order.paid","order":"ord_1"}');

function mac(algorithm: string, content: string | Buffer, secret = SECRET): Buffer {
  return createHmac(algorithm, secret).update(content).digest();
}

describe('hmacVerifier: shapes', () => {
  it('defaults: sha256, hex, no prefix, body only; nothing to return', () => {
    const verifier = hmacVerifier({ secrets: [SECRET], header: 'X-Signature' });
    const headers = { 'x-signature': mac('sha256', body).toString('hex') };
    expect(verifier.verify(body, headers, 0)).toStrictEqual({});
    expect(verifier.scheme).toBe('hmac');
  });

  it('sha1, base64, a prefix, an event id header (header names in any case)', () => {
    const verifier = hmacVerifier({
      secrets: [SECRET],
      header: 'X-Sig',
      algorithm: 'sha1',
      encoding: 'base64',
      prefix: 'sha1=',
      eventIdHeader: 'X-Event-Id',
    });
    const headers = { 'X-SIG': 'sha1=' + mac('sha1', body).toString('base64'), 'x-event-id': 'evt_9' };
    expect(verifier.verify(body, headers, 0)).toStrictEqual({ eventId: 'evt_9' });
    // unpadded base64 is the same signature
    const unpadded = { ...headers, 'X-SIG': headers['X-SIG'].replace(/=+$/, '') };
    expect(verifier.verify(body, unpadded, 0)).toStrictEqual({ eventId: 'evt_9' });
  });

  it('sha512 hex', () => {
    const verifier = hmacVerifier({ secrets: [SECRET], header: 'x-sig', algorithm: 'sha512' });
    expect(verifier.verify(body, { 'x-sig': mac('sha512', body).toString('hex') }, 0)).toStrictEqual({});
    const sha256 = { 'x-sig': mac('sha256', body).toString('hex') };
    expect(fieldsOf(rejectionOf(() => verifier.verify(body, sha256, 0)))).toEqual(
      invalid('hmac', 'malformed_header', 'malformed x-sig header: not <64 bytes of hex>'),
    );
  });

  it('a timestamp header: ${ts}.${body} is signed; returns the time', () => {
    const verifier = hmacVerifier({
      secrets: [SECRET],
      header: 'x-sig',
      timestampHeader: 'X-Timestamp',
      eventIdHeader: 'x-id',
    });
    const sig = mac('sha256', Buffer.concat([Buffer.from(`${T}.`), body])).toString('hex');
    const headers = { 'x-sig': sig, 'x-timestamp': String(T), 'x-id': 'e1' };
    expect(verifier.verify(body, headers, T * 1000)).toStrictEqual({ eventId: 'e1', timestampMs: T * 1000 });
    expect(verifier.verify(body, { 'x-sig': sig, 'x-timestamp': String(T) }, T * 1000)).toStrictEqual({
      timestampMs: T * 1000,
    });
    const bodyOnly = { ...headers, 'x-sig': mac('sha256', body).toString('hex') };
    expect(rejectionOf(() => verifier.verify(body, bodyOnly, T * 1000)).message).toBe('no signature matches');
  });

  it('rotation: the second secret matches', () => {
    const verifier = hmacVerifier({ secrets: ['new-secret', SECRET], header: 'x-sig' });
    expect(verifier.verify(body, { 'x-sig': mac('sha256', body).toString('hex') }, 0)).toStrictEqual({});
  });

  it('hmacSignatureHeader matches the hand computation', () => {
    expect(
      hmacSignatureHeader({ secret: SECRET, algorithm: 'sha1', encoding: 'base64', prefix: 'sha1=' }, body),
    ).toBe('sha1=' + mac('sha1', body).toString('base64'));
    expect(hmacSignatureHeader({ secret: SECRET, timestampMs: T * 1000 + 500 }, body)).toBe(
      mac('sha256', Buffer.concat([Buffer.from(`${T}.`), body])).toString('hex'),
    );
  });
});

describe('hmacVerifier: malformed headers', () => {
  const verifier = hmacVerifier({
    secrets: [SECRET],
    header: 'x-sig',
    encoding: 'base64',
    prefix: 'v1=',
    timestampHeader: 'x-ts',
  });
  const sig = 'v1=' + mac('sha256', Buffer.concat([Buffer.from(`${T}.`), body])).toString('base64');
  const m = invalid('hmac', 'malformed_header', 'malformed x-sig header: not v1=<32 bytes of base64>');
  const cases: [string, Record<string, string | string[] | undefined>, object][] = [
    ['no signature', { 'x-ts': String(T) }, invalid('hmac', 'missing_header', 'no signature header (x-sig)')],
    ['wrong prefix', { 'x-sig': 'v2=' + sig.slice(3), 'x-ts': String(T) }, m],
    ['hex where base64 is expected', { 'x-sig': 'v1=' + 'ab'.repeat(32), 'x-ts': String(T) }, m],
    ['characters outside base64', { 'x-sig': sig.slice(0, 10) + '-' + sig.slice(11), 'x-ts': String(T) }, m],
    ['no timestamp', { 'x-sig': sig }, invalid('hmac', 'missing_header', 'no x-ts header')],
    [
      'timestamp in ms',
      { 'x-sig': sig, 'x-ts': String(T * 1000) + '0' },
      invalid('hmac', 'malformed_header', 'malformed x-ts header: not unix seconds'),
    ],
    [
      'timestamp sent twice',
      { 'x-sig': sig, 'x-ts': [String(T), String(T)] },
      invalid('hmac', 'malformed_header', 'malformed x-ts header: sent more than once'),
    ],
  ];
  for (const [name, headers, expected] of cases) {
    it(name, () => {
      expect(fieldsOf(rejectionOf(() => verifier.verify(body, headers, T * 1000)))).toEqual(expected);
    });
  }

  it('the good header passes', () => {
    expect(verifier.verify(body, { 'x-sig': sig, 'x-ts': String(T) }, T * 1000)).toStrictEqual({
      timestampMs: T * 1000,
    });
  });
});

describe('hmacVerifier: tolerance, both ways', () => {
  const verifier = hmacVerifier({
    secrets: [SECRET],
    header: 'x-sig',
    timestampHeader: 'x-ts',
    toleranceMs: 60_000,
  });
  const headers = {
    'x-sig': mac('sha256', Buffer.concat([Buffer.from(`${T}.`), body])).toString('hex'),
    'x-ts': String(T),
  };

  it('at the limit passes, 1 ms past fails (past and future)', () => {
    const clock = new FakeClock(T * 1000 - 60_000);
    expect(verifier.verify(body, headers, clock.now()).timestampMs).toBe(T * 1000);
    expect(rejectionOf(() => verifier.verify(body, headers, clock.now() - 1)).details).toEqual({
      scheme: 'hmac',
      timestamp_ms: T * 1000,
      now_ms: T * 1000 - 60_001,
      tolerance_ms: 60_000,
    });
    clock.tick(120_000);
    expect(verifier.verify(body, headers, clock.now()).timestampMs).toBe(T * 1000);
    clock.tick(1);
    expect(fieldsOf(rejectionOf(() => verifier.verify(body, headers, clock.now())))).toEqual({
      code: 'stale_timestamp',
      status: 401,
      message: 'the signed timestamp is 60001 ms in the past; the tolerance is 60000 ms either way',
      details: { scheme: 'hmac', timestamp_ms: T * 1000, now_ms: T * 1000 + 60_001, tolerance_ms: 60_000 },
    });
  });
});

describe('hmacVerifier: startup validation', () => {
  const base = { secrets: [SECRET], header: 'x-sig' };
  it.each([
    [{ ...base, header: '' }, "hmacVerifier: header must be a non-empty string, got ''"],
    [
      { ...base, algorithm: 'md5' },
      "hmacVerifier: algorithm must be 'sha256', 'sha1' or 'sha512', got 'md5'",
    ],
    [{ ...base, encoding: 'base32' }, "hmacVerifier: encoding must be 'hex' or 'base64', got 'base32'"],
    [{ ...base, prefix: '' }, "hmacVerifier: prefix must be a non-empty string, got ''"],
    [
      { ...base, toleranceMs: 1000 },
      'hmacVerifier: toleranceMs must be left out without timestampHeader (without one nothing is timed), got 1000',
    ],
    [
      { ...base, timestampHeader: 'x-ts', toleranceMs: -1 },
      'hmacVerifier: toleranceMs must be a finite number > 0, got -1',
    ],
    [
      { ...base, secrets: [] },
      'hmacVerifier: secrets must be a non-empty array of secrets (several for rotation), got an empty array',
    ],
    [
      { ...base, secrets: ['ok', 'tab\t'] },
      "hmacVerifier: secrets[1] must be a shared secret, got 'ta…' (leading or trailing whitespace; a pasted newline?)",
    ],
    [
      { ...base, source: 'shop', secrets: [''] },
      "hmacVerifier (source 'shop'): secrets[0] must be a shared secret, got '…' (empty)",
    ],
  ])('%#: %s', (options, message) => {
    expect(optionError(() => hmacVerifier(options as never))).toBe(message);
  });

  it('reports every bad option at once, in one OptionsError, never showing a secret', () => {
    const error = expectOptionsError(
      () =>
        hmacVerifier({
          secrets: ['ok-secret', ' padded-secret', 42 as never],
          header: '',
          algorithm: 'md5' as never,
          toleranceMs: 1000,
          source: 'shop',
        }),
      {
        owner: "hmacVerifier (source 'shop')",
        options: ['secrets[1]', 'secrets[2]', 'header', 'algorithm', 'toleranceMs'],
        message:
          "hmacVerifier (source 'shop'): secrets[1] must be a shared secret, got ' pad…' (leading or trailing whitespace; a pasted newline?); " +
          'secrets[2] must be a shared secret, got a number; ' +
          "header must be a non-empty string, got ''; " +
          "algorithm must be 'sha256', 'sha1' or 'sha512', got 'md5'; " +
          'toleranceMs must be left out without timestampHeader (without one nothing is timed), got 1000',
      },
    );
    expect(JSON.stringify(error.problems)).not.toContain('padded-secret');
  });
});

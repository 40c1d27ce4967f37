import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.js';
import { stripeSignatureHeader } from './sign.js';
import { stripeVerifier } from './stripe.js';
import { T, fieldsOf, invalid, optionError, expectOptionsError, rejectionOf } from './test-support.js';

const SECRET = 'whsec_test_6fd2a1c0b7e94f3c8a5d';
const OLD = 'whsec_test_previous_0c1d2e3f';
const body = Buffer.from('{"id":"evt_1","type":"payment_intent.succeeded"}');

/** Stripe's scheme computed by hand: hex HMAC-SHA256 of `${t}.${body}`, keyed with the whole secret string. */
function v1(secret: string, t: number, payload: Buffer = body): string {
  return createHmac('sha256', secret).update(`${t}.`).update(payload).digest('hex');
}
const signed = (header: string): Record<string, string> => ({ 'stripe-signature': header });

describe('stripeVerifier: signatures', () => {
  const verifier = stripeVerifier({ secrets: [SECRET] });
  const now = T * 1000;

  it('a hand-computed signature passes, returning only the signed time (the event id is the body’s id)', () => {
    const hex = v1(SECRET, T);
    expect(hex).toMatch(/^[0-9a-f]{64}$/);
    expect(verifier.verify(body, signed(`t=${T},v1=${hex}`), now)).toStrictEqual({ timestampMs: T * 1000 });
    expect(verifier.scheme).toBe('stripe');
  });

  it('the key is the whole secret string, whsec_ included', () => {
    const withoutPrefix = v1(SECRET.slice('whsec_'.length), T);
    expect(
      fieldsOf(rejectionOf(() => verifier.verify(body, signed(`t=${T},v1=${withoutPrefix}`), now))),
    ).toEqual(invalid('stripe', 'no_match', 'no signature matches'));
  });

  it('t is signed: the same v1 under another t fails', () => {
    const header = `t=${T + 1},v1=${v1(SECRET, T)}`;
    expect(rejectionOf(() => verifier.verify(body, signed(header), now)).message).toBe(
      'no signature matches',
    );
  });

  it('rotation: a signature from the second secret passes', () => {
    const rotated = stripeVerifier({ secrets: [SECRET, OLD] });
    expect(rotated.verify(body, signed(`t=${T},v1=${v1(OLD, T)}`), now).timestampMs).toBe(T * 1000);
  });

  it('any of several v1 may match; v0 and unknown items are ignored; order and spaces do not matter', () => {
    const header = `v0=${'0'.repeat(64)}, v1=${v1(OLD, T)} ,scheme=x, v1=${v1(SECRET, T)}, t=${T}`;
    expect(verifier.verify(body, signed(header), now).timestampMs).toBe(T * 1000);
  });

  it('an uppercase hex digest is the same digest', () => {
    const header = `t=${T},v1=${v1(SECRET, T).toUpperCase()}`;
    expect(verifier.verify(body, signed(header), now).timestampMs).toBe(T * 1000);
  });

  it('stripeSignatureHeader matches the hand computation (seconds truncated)', () => {
    expect(stripeSignatureHeader(SECRET, T * 1000 + 999, body)).toBe(`t=${T},v1=${v1(SECRET, T)}`);
  });
});

describe('stripeVerifier: malformed headers', () => {
  const verifier = stripeVerifier({ secrets: [SECRET] });
  const hex = v1(SECRET, T);
  const m = (what: string): object =>
    invalid('stripe', 'malformed_header', `malformed stripe-signature header: ${what}`);
  const cases: [string, Record<string, string | string[] | undefined>, object][] = [
    ['no header', {}, invalid('stripe', 'missing_header', 'no signature header (stripe-signature)')],
    [
      'an empty header',
      signed(''),
      invalid('stripe', 'missing_header', 'no signature header (stripe-signature)'),
    ],
    ['no t', signed(`v1=${hex}`), m('no t= timestamp')],
    ['t not a number', signed(`t=abc,v1=${hex}`), m('t= is not unix seconds')],
    ['t with a fraction', signed(`t=${T}.5,v1=${hex}`), m('t= is not unix seconds')],
    ['t empty', signed(`t=,v1=${hex}`), m('t= is not unix seconds')],
    ['two t', signed(`t=${T},t=${T},v1=${hex}`), m('more than one t=')],
    ['no v1', signed(`t=${T},v0=${hex}`), m('no v1= signature')],
    ['v1 not hex', signed(`t=${T},v1=${'z'.repeat(64)}`), m('a v1= signature is not 64 hex digits')],
    ['v1 too short', signed(`t=${T},v1=${hex.slice(0, 63)}`), m('a v1= signature is not 64 hex digits')],
    ['v1 empty', signed(`t=${T},v1=`), m('a v1= signature is not 64 hex digits')],
    ['a bare v1', signed(`t=${T},v1`), m('a v1= signature is not 64 hex digits')],
    [
      'sent twice',
      { 'stripe-signature': [`t=${T},v1=${hex}`, `t=${T},v1=${hex}`] },
      m('sent more than once'),
    ],
  ];
  for (const [name, headers, expected] of cases) {
    it(name, () => {
      expect(fieldsOf(rejectionOf(() => verifier.verify(body, headers, T * 1000)))).toEqual(expected);
    });
  }
});

describe('stripeVerifier: tolerance, both ways', () => {
  const verifier = stripeVerifier({ secrets: [SECRET] });
  const headers = signed(`t=${T},v1=${v1(SECRET, T)}`);

  it('exactly 300 s old passes, 1 ms more fails', () => {
    const clock = new FakeClock(T * 1000);
    clock.tick(300_000);
    expect(verifier.verify(body, headers, clock.now()).timestampMs).toBe(T * 1000);
    clock.tick(1);
    expect(fieldsOf(rejectionOf(() => verifier.verify(body, headers, clock.now())))).toEqual({
      code: 'stale_timestamp',
      status: 401,
      message: 'the signed timestamp is 300001 ms in the past; the tolerance is 300000 ms either way',
      details: {
        scheme: 'stripe',
        timestamp_ms: T * 1000,
        now_ms: T * 1000 + 300_001,
        tolerance_ms: 300_000,
      },
    });
  });

  it('exactly 300 s in the future passes, 1 ms more fails', () => {
    expect(verifier.verify(body, headers, T * 1000 - 300_000).timestampMs).toBe(T * 1000);
    expect(rejectionOf(() => verifier.verify(body, headers, T * 1000 - 300_001)).details).toEqual({
      scheme: 'stripe',
      timestamp_ms: T * 1000,
      now_ms: T * 1000 - 300_001,
      tolerance_ms: 300_000,
    });
  });

  it('a custom toleranceMs', () => {
    const tight = stripeVerifier({ secrets: [SECRET], toleranceMs: 10_000 });
    expect(tight.verify(body, headers, T * 1000 + 10_000).timestampMs).toBe(T * 1000);
    expect(rejectionOf(() => tight.verify(body, headers, T * 1000 + 10_001)).code).toBe('stale_timestamp');
  });
});

describe('stripeVerifier: startup validation', () => {
  it.each([
    [
      [],
      'stripeVerifier: secrets must be a non-empty array of secrets (several for rotation), got an empty array',
    ],
    [
      undefined,
      'stripeVerifier: secrets must be a non-empty array of secrets (several for rotation), got undefined',
    ],
    [
      [SECRET, 'sk_live_abcdef'],
      "stripeVerifier: secrets[1] must be a 'whsec_' signing secret, got 'sk_l…' (no 'whsec_' prefix)",
    ],
    [
      ['whsec_'],
      "stripeVerifier: secrets[0] must be a 'whsec_' signing secret, got 'whs…' (empty after the prefix)",
    ],
    [
      [' ' + SECRET],
      "stripeVerifier: secrets[0] must be a 'whsec_' signing secret, got ' whs…' (leading or trailing whitespace; a pasted newline?)",
    ],
  ])('%j', (secrets, message) => {
    expect(optionError(() => stripeVerifier({ secrets: secrets as string[] }))).toBe(message);
  });

  it('names the source; checks toleranceMs', () => {
    expect(optionError(() => stripeVerifier({ secrets: ['x'], source: 'stripe-live' }))).toBe(
      "stripeVerifier (source 'stripe-live'): secrets[0] must be a 'whsec_' signing secret, got '…' (no 'whsec_' prefix)",
    );
    expect(optionError(() => stripeVerifier({ secrets: [SECRET], toleranceMs: Infinity }))).toBe(
      'stripeVerifier: toleranceMs must be a finite number > 0, got Infinity',
    );
    expect(optionError(() => stripeVerifier({ secrets: [SECRET], source: '' }))).toBe(
      "stripeVerifier: source must be a non-empty string or left out, got ''",
    );
  });

  it('reports every bad option at once, in one OptionsError', () => {
    const error = expectOptionsError(
      () => stripeVerifier({ secrets: ['sk_live_abcdef', 'whsec_'], toleranceMs: 0, source: '' }),
      {
        owner: 'stripeVerifier',
        options: ['secrets[0]', 'secrets[1]', 'toleranceMs', 'source'],
        message:
          "stripeVerifier: secrets[0] must be a 'whsec_' signing secret, got 'sk_l…' (no 'whsec_' prefix); " +
          "secrets[1] must be a 'whsec_' signing secret, got 'whs…' (empty after the prefix); " +
          'toleranceMs must be a finite number > 0, got 0; ' +
          "source must be a non-empty string or left out, got ''",
      },
    );
    expect(JSON.stringify(error.problems)).not.toContain('sk_live_abcdef');
  });
});

import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../core/index.js';
import { signStandardWebhook } from './sign.js';
import { standardWebhooksVerifier } from './standard-webhooks.js';
import { T, fieldsOf, invalid, optionError, rejectionOf } from './test-support.js';

// The official library's "sign function works" test (standard-webhooks, libraries/javascript/src/webhook.test.ts).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const vectorHeaders = {
  'webhook-id': VECTOR.id,
  'webhook-timestamp': String(VECTOR.timestamp),
  'webhook-signature': VECTOR.signature,
};
const OTHER = 'whsec_' + Buffer.alloc(32, 7).toString('base64');

/** The `v1,<base64>` signature computed by hand over raw bytes, independent of the code under test. */
function v1(secret: string, id: string, ts: number, body: Buffer): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return 'v1,' + createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64');
}

describe('standardWebhooksVerifier: the official test vector', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("the library's sign reproduces the documented signature", () => {
    const signed = new Webhook(VECTOR.secret).sign(
      VECTOR.id,
      new Date(VECTOR.timestamp * 1000),
      VECTOR.payload,
    );
    expect(signed).toBe(VECTOR.signature);
  });

  it('verifies the vector at its own time, returning the webhook-id and the signed time in ms', () => {
    const verifier = standardWebhooksVerifier({ secrets: [VECTOR.secret] });
    const result = verifier.verify(Buffer.from(VECTOR.payload), vectorHeaders, VECTOR.timestamp * 1000);
    expect(result).toStrictEqual({ eventId: VECTOR.id, timestampMs: 1614265330000 });
    expect(verifier.scheme).toBe('standard-webhooks');
  });

  it("agrees with the library's own verify (its Date.now pinned by fake timers)", () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(VECTOR.timestamp * 1000 + 299_000);
    expect(new Webhook(VECTOR.secret).verify(VECTOR.payload, vectorHeaders)).toEqual({ test: 2432232314 });
    const verifier = standardWebhooksVerifier({ secrets: [VECTOR.secret] });
    expect(verifier.verify(Buffer.from(VECTOR.payload), vectorHeaders, Date.now()).eventId).toBe(VECTOR.id);
  });

  it('signStandardWebhook produces the vector headers', () => {
    expect(
      signStandardWebhook(VECTOR.secret, VECTOR.id, VECTOR.timestamp * 1000 + 999, VECTOR.payload),
    ).toEqual(vectorHeaders);
  });
});

describe('standardWebhooksVerifier: signatures', () => {
  const clock = new FakeClock();
  const body = Buffer.from('{"type":"payment.succeeded"}');
  const sig = v1(VECTOR.secret, 'msg_1', T, body);
  const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(T), 'webhook-signature': sig };
  const verifier = standardWebhooksVerifier({ secrets: [VECTOR.secret] });

  it('rotation: a signature from the second secret passes', () => {
    const rotated = standardWebhooksVerifier({ secrets: [OTHER, VECTOR.secret] });
    expect(rotated.verify(body, headers, clock.now())).toStrictEqual({
      eventId: 'msg_1',
      timestampMs: T * 1000,
    });
    const other = standardWebhooksVerifier({ secrets: [OTHER] });
    expect(fieldsOf(rejectionOf(() => other.verify(body, headers, clock.now())))).toEqual(
      invalid('standard-webhooks', 'no_match', 'no signature matches'),
    );
  });

  it('any v1 entry of a list may match; other versions are skipped; doubled spaces are tolerated', () => {
    const wrong = v1(OTHER, 'msg_1', T, body);
    const list = `v1a,${'A'.repeat(86)}==  ${wrong} ${sig}`;
    expect(verifier.verify(body, { ...headers, 'webhook-signature': list }, clock.now()).eventId).toBe(
      'msg_1',
    );
  });

  it('headers are found in any case', () => {
    const upper = { 'Webhook-Id': 'msg_1', 'WEBHOOK-TIMESTAMP': String(T), 'Webhook-Signature': sig };
    expect(verifier.verify(body, upper, clock.now()).eventId).toBe('msg_1');
  });

  it('the id and the timestamp are signed: changing either fails', () => {
    for (const changed of [
      { ...headers, 'webhook-id': 'msg_2' },
      { ...headers, 'webhook-timestamp': String(T + 1) },
    ]) {
      expect(rejectionOf(() => verifier.verify(body, changed, clock.now())).message).toBe(
        'no signature matches',
      );
    }
  });

  it('the rejection never carries the expected signature', () => {
    const error = rejectionOf(() => verifier.verify(Buffer.from('{}'), headers, clock.now()));
    const expected = v1(VECTOR.secret, 'msg_1', T, Buffer.from('{}')).slice(3);
    expect(JSON.stringify({ m: error.message, d: error.details })).not.toContain(expected);
    expect(error.stack ?? '').not.toContain(expected);
  });

  it('invalid UTF-8: the library signs the U+FFFD-replaced text, so two bodies share one signature; here they do not', () => {
    const a = Buffer.from([0x7b, 0xff, 0x7d]);
    const b = Buffer.from([0x7b, 0xfe, 0x7d]);
    const lib = new Webhook(VECTOR.secret);
    expect(lib.sign('msg_1', new Date(T * 1000), a)).toBe(lib.sign('msg_1', new Date(T * 1000), b));
    const signedA = { ...headers, 'webhook-signature': v1(VECTOR.secret, 'msg_1', T, a) };
    expect(verifier.verify(a, signedA, clock.now()).eventId).toBe('msg_1');
    expect(rejectionOf(() => verifier.verify(b, signedA, clock.now())).message).toBe('no signature matches');
  });
});

describe('standardWebhooksVerifier: malformed headers', () => {
  const now = T * 1000;
  const body = Buffer.from('{}');
  const good = {
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(T),
    'webhook-signature': v1(VECTOR.secret, 'msg_1', T, body),
  };
  const verifier = standardWebhooksVerifier({ secrets: [VECTOR.secret] });
  const sw = (reason: string, message: string): object => invalid('standard-webhooks', reason, message);
  const m = 'malformed webhook-signature header: ';

  const cases: [string, Record<string, string | string[] | undefined>, object][] = [
    [
      'no signature',
      { ...good, 'webhook-signature': undefined },
      sw('missing_header', 'no signature header (webhook-signature)'),
    ],
    [
      'empty signature',
      { ...good, 'webhook-signature': '' },
      sw('missing_header', 'no signature header (webhook-signature)'),
    ],
    [
      'no id',
      { ...good, 'webhook-id': undefined },
      sw('missing_header', 'no webhook-id header (it is part of the signed content)'),
    ],
    [
      'no timestamp',
      { ...good, 'webhook-timestamp': undefined },
      sw('missing_header', 'no webhook-timestamp header'),
    ],
    [
      'timestamp not a number',
      { ...good, 'webhook-timestamp': 'hello' },
      sw('malformed_header', 'malformed webhook-timestamp header: not unix seconds'),
    ],
    [
      'timestamp with a leading zero',
      { ...good, 'webhook-timestamp': '0' + T },
      sw('malformed_header', 'malformed webhook-timestamp header: not unix seconds'),
    ],
    [
      'timestamp in ms',
      { ...good, 'webhook-timestamp': String(now) + '0' },
      sw('malformed_header', 'malformed webhook-timestamp header: not unix seconds'),
    ],
    [
      'negative timestamp',
      { ...good, 'webhook-timestamp': '-1' },
      sw('malformed_header', 'malformed webhook-timestamp header: not unix seconds'),
    ],
    [
      'an entry without a comma',
      { ...good, 'webhook-signature': 'v1' },
      sw('malformed_header', m + 'an entry is not <version>,<signature>'),
    ],
    [
      'an entry without a version',
      { ...good, 'webhook-signature': ',abc' },
      sw('malformed_header', m + 'an entry is not <version>,<signature>'),
    ],
    [
      'an empty v1',
      { ...good, 'webhook-signature': 'v1,' },
      sw('malformed_header', m + 'a v1 signature is not 32 bytes of base64'),
    ],
    [
      'a truncated v1',
      { ...good, 'webhook-signature': good['webhook-signature'].slice(0, 20) },
      sw('malformed_header', m + 'a v1 signature is not 32 bytes of base64'),
    ],
    [
      'a v1 outside base64',
      { ...good, 'webhook-signature': 'v1,' + '*'.repeat(43) + '=' },
      sw('malformed_header', m + 'a v1 signature is not 32 bytes of base64'),
    ],
    [
      'only other versions',
      { ...good, 'webhook-signature': 'v2,' + good['webhook-signature'].slice(3) },
      sw('malformed_header', m + 'no v1 signature'),
    ],
    [
      'sent twice',
      { ...good, 'webhook-signature': [good['webhook-signature'], good['webhook-signature']] },
      sw('malformed_header', 'malformed webhook-signature header: sent more than once'),
    ],
  ];
  for (const [name, headers, expected] of cases) {
    it(name, () => {
      expect(fieldsOf(rejectionOf(() => verifier.verify(body, headers, now)))).toEqual(expected);
    });
  }

  it('a header given once as a one-element array is read', () => {
    const headers = { ...good, 'webhook-signature': [good['webhook-signature']] };
    expect(verifier.verify(body, headers, now).eventId).toBe('msg_1');
  });
});

describe('standardWebhooksVerifier: tolerance, both ways, on the caller’s clock', () => {
  const body = Buffer.from('{}');
  const headers = {
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(T),
    'webhook-signature': v1(VECTOR.secret, 'msg_1', T, body),
  };

  it('default 300 s: exactly at the limit passes, 1 ms past fails', () => {
    const verifier = standardWebhooksVerifier({ secrets: [VECTOR.secret] });
    const late = new FakeClock(T * 1000);
    late.tick(300_000);
    expect(verifier.verify(body, headers, late.now()).timestampMs).toBe(T * 1000);
    late.tick(1);
    const error = rejectionOf(() => verifier.verify(body, headers, late.now()));
    expect(fieldsOf(error)).toEqual({
      code: 'stale_timestamp',
      status: 401,
      message: 'the signed timestamp is 300001 ms in the past; the tolerance is 300000 ms either way',
      details: {
        scheme: 'standard-webhooks',
        timestamp_ms: T * 1000,
        now_ms: T * 1000 + 300_001,
        tolerance_ms: 300_000,
      },
    });

    const early = new FakeClock(T * 1000 - 300_000);
    expect(verifier.verify(body, headers, early.now()).timestampMs).toBe(T * 1000);
    expect(rejectionOf(() => verifier.verify(body, headers, early.now() - 1)).message).toBe(
      'the signed timestamp is 300001 ms in the future; the tolerance is 300000 ms either way',
    );
  });

  it('a custom toleranceMs', () => {
    const verifier = standardWebhooksVerifier({ secrets: [VECTOR.secret], toleranceMs: 1500 });
    expect(verifier.verify(body, headers, T * 1000 + 1500).eventId).toBe('msg_1');
    expect(rejectionOf(() => verifier.verify(body, headers, T * 1000 - 1501)).details).toEqual({
      scheme: 'standard-webhooks',
      timestamp_ms: T * 1000,
      now_ms: T * 1000 - 1501,
      tolerance_ms: 1500,
    });
  });

  it('the source is named on rejections', () => {
    const verifier = standardWebhooksVerifier({ secrets: [VECTOR.secret], source: 'commerce' });
    expect(rejectionOf(() => verifier.verify(body, {}, T * 1000)).source).toBe('commerce');
  });
});

describe('standardWebhooksVerifier: startup validation', () => {
  const cases: [string, unknown, string][] = [
    [
      'empty list',
      [],
      'standardWebhooksVerifier: secrets must be a non-empty array of secrets (several for rotation), got an empty array',
    ],
    [
      'a string, not a list',
      VECTOR.secret,
      'standardWebhooksVerifier: secrets must be a non-empty array of secrets (several for rotation), got a string',
    ],
    [
      'no prefix',
      [VECTOR.secret, 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      "standardWebhooksVerifier: secrets[1] must be a 'whsec_' base64 secret, got 'MfKQ…' (no 'whsec_' prefix)",
    ],
    [
      'not base64',
      ['whsec_abc!def'],
      "standardWebhooksVerifier: secrets[0] must be a 'whsec_' base64 secret, got 'whse…' (not base64)",
    ],
    [
      'url-safe alphabet',
      ['whsec_ab-_cdef'],
      "standardWebhooksVerifier: secrets[0] must be a 'whsec_' base64 secret, got 'whse…' (not base64)",
    ],
    [
      'a dangling character',
      ['whsec_abcde'],
      "standardWebhooksVerifier: secrets[0] must be a 'whsec_' base64 secret, got 'whse…' (not base64)",
    ],
    [
      'only the prefix',
      ['whsec_'],
      "standardWebhooksVerifier: secrets[0] must be a 'whsec_' base64 secret, got 'whs…' (empty after the prefix)",
    ],
    ['empty', [''], "standardWebhooksVerifier: secrets[0] must be a 'whsec_' base64 secret, got '…' (empty)"],
    [
      'a pasted newline',
      [VECTOR.secret + '\n'],
      "standardWebhooksVerifier: secrets[0] must be a 'whsec_' base64 secret, got 'whse…' (leading or trailing whitespace; a pasted newline?)",
    ],
    [
      'not a string',
      [42],
      "standardWebhooksVerifier: secrets[0] must be a 'whsec_' base64 secret, got a number",
    ],
  ];
  for (const [name, secrets, message] of cases) {
    it(name, () => {
      expect(optionError(() => standardWebhooksVerifier({ secrets: secrets as string[] }))).toBe(message);
    });
  }

  it('names the source and checks toleranceMs', () => {
    expect(optionError(() => standardWebhooksVerifier({ secrets: ['nope1234'], source: 'svix' }))).toBe(
      "standardWebhooksVerifier (source 'svix'): secrets[0] must be a 'whsec_' base64 secret, got 'nope…' (no 'whsec_' prefix)",
    );
    expect(optionError(() => standardWebhooksVerifier({ secrets: [VECTOR.secret], toleranceMs: 0 }))).toBe(
      'standardWebhooksVerifier: toleranceMs must be a finite number > 0, got 0',
    );
  });

  describe('secret length: the spec asks for 24 to 64 bytes (a truncated secret must not be accepted)', () => {
    const ofBytes = (n: number): string => 'whsec_' + Buffer.alloc(n, 0x5a).toString('base64');
    const refused = (n: number, reason: string): string =>
      `standardWebhooksVerifier (source 'payments'): secrets[0] must be a 'whsec_' base64 secret, got 'whse…' (${reason})`;

    it.each([
      [6, '6 bytes after base64 decoding; the Standard Webhooks spec asks for 24 to 64: a truncated paste?'],
      [
        23,
        '23 bytes after base64 decoding; the Standard Webhooks spec asks for 24 to 64: a truncated paste?',
      ],
      [65, '65 bytes after base64 decoding; the Standard Webhooks spec asks for 24 to 64'],
    ])('refuses %i bytes at startup, naming the source', (n, reason) => {
      expect(optionError(() => standardWebhooksVerifier({ secrets: [ofBytes(n)], source: 'payments' }))).toBe(
        refused(n, reason),
      );
    });

    it('refuses a short secret among rotated ones, by its index', () => {
      expect(optionError(() => standardWebhooksVerifier({ secrets: [OTHER, ofBytes(16)] }))).toBe(
        "standardWebhooksVerifier: secrets[1] must be a 'whsec_' base64 secret, got 'whse…' (16 bytes after base64 decoding; the Standard Webhooks spec asks for 24 to 64: a truncated paste?)",
      );
    });

    it.each([24, 32, 64])('accepts %i bytes and verifies with them', (n) => {
      const secret = ofBytes(n);
      const body = Buffer.from('{"n":1}');
      const headers = {
        'webhook-id': 'msg_1',
        'webhook-timestamp': String(T),
        'webhook-signature': v1(secret, 'msg_1', T, body),
      };
      expect(standardWebhooksVerifier({ secrets: [secret] }).verify(body, headers, T * 1000).eventId).toBe(
        'msg_1',
      );
    });
  });

  describe("a pasted 'v1,' in front (a signature's version prefix, not part of a secret)", () => {
    it("a secret with 'v1,' in front is named as such, not as a missing prefix", () => {
      expect(
        optionError(() => standardWebhooksVerifier({ secrets: [`v1,${VECTOR.secret}`], source: 'payments' })),
      ).toBe(
        "standardWebhooksVerifier (source 'payments'): secrets[0] must be a 'whsec_' base64 secret, got 'v1,w…' (looks like a signature prefix 'v1,' pasted in front of the secret: remove it)",
      );
    });

    it('a whole v1 signature pasted as a secret is named as a signature', () => {
      expect(optionError(() => standardWebhooksVerifier({ secrets: [VECTOR.signature] }))).toBe(
        "standardWebhooksVerifier: secrets[0] must be a 'whsec_' base64 secret, got 'v1,g…' (looks like a signature 'v1,<base64>', not a secret)",
      );
    });
  });

  it('unpadded base64 is accepted and keyed as the library keys it', () => {
    const secret = 'whsec_' + Buffer.alloc(31, 9).toString('base64').replace(/=+$/, '');
    const signed = new Webhook(secret).sign('msg_1', new Date(T * 1000), '{}');
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(T), 'webhook-signature': signed };
    expect(
      standardWebhooksVerifier({ secrets: [secret] }).verify(Buffer.from('{}'), headers, T * 1000).eventId,
    ).toBe('msg_1');
  });
});

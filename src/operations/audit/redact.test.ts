import { describe, expect, it } from 'vitest';
import { BreakwaterError, MAX_JSON_DEPTH } from '../../core/index.js';
import { TOO_DEEP, isSecretKey, redact, redactText } from './redact.js';

describe('redact', () => {
  it('replaces secret members, nested and in arrays, whatever their value', () => {
    expect(
      redact({
        headers: {
          Authorization: 'Bearer abc',
          cookie: 'sid=1',
          'Set-Cookie': ['a=1', 'b=2'],
          'content-type': 'application/json',
        },
        user: {
          name: 'Ada',
          password: 'hunter2',
          passwordHash: 'x',
          profile: { api_key: 'k1', apiKey: 'k2' },
        },
        items: [
          { token: { value: 1 }, id: 'i1' },
          { access_token: 't', refresh_token: null },
        ],
        'X-API-Key': 'k3',
        apikey: 'k4',
        client_secret: 's',
        'stripe-signature': 't=1,v1=abc',
        signature: 'sig',
        max_tokens: 100,
        tokens_used: 42,
      }),
    ).toEqual({
      headers: {
        Authorization: '[redacted]',
        cookie: '[redacted]',
        'Set-Cookie': '[redacted]',
        'content-type': 'application/json',
      },
      user: {
        name: 'Ada',
        password: '[redacted]',
        passwordHash: '[redacted]',
        profile: { api_key: '[redacted]', apiKey: '[redacted]' },
      },
      items: [
        { token: '[redacted]', id: 'i1' },
        { access_token: '[redacted]', refresh_token: '[redacted]' },
      ],
      'X-API-Key': '[redacted]',
      apikey: '[redacted]',
      client_secret: '[redacted]',
      'stripe-signature': '[redacted]',
      signature: '[redacted]',
      max_tokens: 100,
      tokens_used: 42,
    });
  });

  it('masks card-like numbers in strings, keeping the last 4 digits and the separators', () => {
    expect(redactText('card 4242 4242 4242 4242 ok')).toBe('card **** **** **** 4242 ok');
    expect(redactText('4111-1111-1111-1111')).toBe('****-****-****-1111');
    expect(redactText('n=4111111111111111;')).toBe('n=************1111;');
    expect(redactText('amex 378282246310005')).toBe('amex ***********0005');
    expect(redactText('6011000990139424 and 5555555555554444')).toBe('************9424 and ************4444');
  });

  it('leaves digits alone that are not card-like', () => {
    // Fails the Luhn check.
    expect(redactText('4242 4242 4242 4241')).toBe('4242 4242 4242 4241');
    // Too short, and too long (a number is never cut inside a group of its digits).
    expect(redactText('order 424242424242')).toBe('order 424242424242');
    expect(redactText('42424242424242424242')).toBe('42424242424242424242');
    // Three separators in a row break the number.
    expect(redactText('4242   4242 4242 4242')).toBe('4242   4242 4242 4242');
  });

  it('leaves UUIDs alone, even with a Luhn-valid run in or across their last groups', () => {
    // A job id whose last two groups hold "695-03833708259", 14 digits that pass the Luhn check.
    const id = 'job_01a2379e-5690-726b-b695-03833708259b';
    expect(redactText(id)).toBe(id);
    expect(redactText(`canceled ${id}.`)).toBe(`canceled ${id}.`);
    // All-decimal last groups, set off by dashes, and followed by another number: still the UUID's digits.
    const uuid = '01a2379e-5690-726b-4242-424242424242';
    expect(redactText(`job_${uuid}`)).toBe(`job_${uuid}`);
    expect(redactText(`job_${uuid} 1`)).toBe(`job_${uuid} 1`);
    // The same digits elsewhere are masked; so are digits glued to letters (only a UUID is an id).
    expect(redactText('4242-424242424242')).toBe('****-********4242');
    expect(redactText('sha a4242424242424242f')).toBe('sha a************4242f');
    expect(redactText('card:4242424242424242, uuid 01a2379e-5690-726b-b695-038337082591')).toBe(
      'card:************4242, uuid 01a2379e-5690-726b-b695-038337082591',
    );
  });

  it('finds a card among the whole groups of a longer run, never inside a group', () => {
    expect(redactText('4242 4242 4242 4242 4242')).toBe('**** **** **** 4242 4242');
    expect(redactText('4242 4242 4242 4242 12/27')).toBe('**** **** **** 4242 12/27');
    expect(redactText('ref 1 4111-1111-1111-1111 cvc 123')).toBe('ref 1 ****-****-****-1111 cvc 123');
    expect(redactText('two: 4242424242424242 5555555555554444')).toBe(
      'two: ************4242 ************4444',
    );
  });

  it('masks cards written with dots or double spaces, HTTP credentials, URL passwords and secret parameters', () => {
    expect(redactText('card 4242.4242.4242.4242 or 4242  4242  4242  4242')).toBe(
      'card ****.****.****.4242 or ****  ****  ****  4242',
    );
    expect(redactText('auth: Basic dXNlcjpodW50ZXIy and bearer abc.def')).toBe(
      'auth: Basic [redacted] and bearer [redacted]',
    );
    expect(redactText('postgres://app:hunter2@db:5432/x')).toBe('postgres://[redacted]@db:5432/x');
    expect(redactText('GET /cb?access_token=abc&page=2&api_key=k1')).toBe(
      'GET /cb?access_token=[redacted]&page=2&api_key=[redacted]',
    );
  });

  it('treats card codes, PINs, plural and compound secret names as secret, and counts as counts', () => {
    const secret = [
      'cvc',
      'cvv',
      'pin',
      'tokens',
      'secrets',
      'passwords',
      'accessTokens',
      'private_key',
      'privateKey',
      'client_key',
      'stripe_key',
      'jwt',
      'auth',
    ];
    for (const key of secret) expect([key, isSecretKey(key)]).toEqual([key, true]);
    const plain = [
      'idempotency_key',
      'max_tokens',
      'prompt_tokens',
      'tokens_used',
      'ordering_key',
      'pinned',
      'author',
    ];
    for (const key of plain) expect([key, isSecretKey(key)]).toEqual([key, false]);
  });

  it('masks card-like integers', () => {
    expect(redact({ pan: 4242424242424242, amount: 1999, at: 1717171717170 })).toEqual({
      pan: '************4242',
      amount: 1999,
      at: 1717171717170,
    });
  });

  it('redacts bearer credentials in free text, any case', () => {
    expect(redactText('sent Authorization: Bearer eyJhbGciOi.J9.x-_~+/== to upstream')).toBe(
      'sent Authorization: Bearer [redacted] to upstream',
    );
    expect(redactText('bearer abc123')).toBe('bearer [redacted]');
    expect(redact(['Bearer t1', { note: 'BEARER t2' }])).toEqual([
      'Bearer [redacted]',
      { note: 'BEARER [redacted]' },
    ]);
  });

  it('masks API keys and JWTs by their look, in free text and values; leaves look-alikes alone', () => {
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl';
    expect(
      redact({
        note: 'key sk-proj-abc123def456ghi789 then sk-ant-api03-Zx9Yw8Vu7Ts6Rq5 end',
        openai: 'sk-0123456789abcdefABCDEF',
        list: [
          'sk_test_4eC39HqLyjWDarjtT1zdp7dc',
          'rk_live_abcdefgh12',
          'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        ],
        github: ['ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'github_pat_11ABCDEFG0123456789_abcdefghij'],
        cloud: [
          'AIzaSyA1234567890abcdefghijklmnopqrstu',
          'AKIAIOSFODNN7EXAMPLE',
          'xoxb-1234567890-abcdefghij',
        ],
        breakwater: `calling with bw_0123456789abcdef_${'aZ0_-'.repeat(8)}abc now`,
        said: `got ${jwt}.`,
        jwe: `${jwt}.part4.part5`,
      }),
    ).toEqual({
      note: 'key [redacted] then [redacted] end',
      openai: '[redacted]',
      list: ['[redacted]', '[redacted]', '[redacted]'],
      github: ['[redacted]', '[redacted]'],
      cloud: ['[redacted]', '[redacted]', '[redacted]'],
      breakwater: 'calling with [redacted] now',
      said: 'got [redacted].',
      jwe: '[redacted]',
    });
    // Words and ids that only resemble them.
    for (const text of [
      'sk-learn-pipelines-and-more',
      'task-12345678901234567',
      'disk-0123456789abcdef',
      'eyJ alone',
      'ask_live_x',
      'AKIA-short',
      'bw_0123456789abcdef_short',
      '0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b',
      'max_tokens=300&prompt_tokens=12',
    ]) {
      expect(redactText(text)).toBe(text);
    }
  });

  it('masks parameters that are secret in URLs (key, code, sig, session) and Bearer written in a query', () => {
    expect(redactText('GET /cb?code=4%2F0AX&state=ok&key=AIzaX&sig=abc&session_id=s1&page=2')).toBe(
      'GET /cb?code=[redacted]&state=ok&key=[redacted]&sig=[redacted]&session_id=[redacted]&page=2',
    );
    expect(redactText('/search?q=Bearer%20abc.def&r=Bearer+xyz')).toBe(
      '/search?q=Bearer%20[redacted]&r=Bearer+[redacted]',
    );
    // As object keys, `key` and `code` are not secret (an idempotency key, an error code).
    expect(redact({ key: 'k1', code: 'not_found' })).toEqual({ key: 'k1', code: 'not_found' });
  });

  it('follows JSON: toJSON honoured, primitives kept, the input untouched', () => {
    const input = { when: new Date(Date.UTC(2024, 0, 2)), ok: true, n: null, password: 'p' };
    expect(redact(input)).toEqual({
      when: '2024-01-02T00:00:00.000Z',
      ok: true,
      n: null,
      password: '[redacted]',
    });
    expect(input.password).toBe('p');
    expect(redact('plain')).toBe('plain');
    expect(redact(7)).toBe(7);
  });

  it('keeps a __proto__ member a plain member', () => {
    const out = redact(JSON.parse('{"__proto__":{"token":"t"}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toEqual({ token: '[redacted]' });
  });

  it('masks what nests past MAX_JSON_DEPTH as "[too deep]" (a value nested 10,000 deep is stored, not a stack overflow)', () => {
    let deep: unknown = { token: 'sk-live-0123456789abcdef0123', note: 'x' };
    for (let i = 0; i < 10_000; i++) deep = { next: deep };
    let out = redact({ args: deep }) as Record<string, unknown>;
    // The top object is level 1, `args` level 2, …: the last object kept is at level MAX_JSON_DEPTH.
    let levels = 1;
    out = out.args as Record<string, unknown>;
    while (typeof out === 'object') {
      levels++;
      out = out.next as Record<string, unknown>;
    }
    expect(levels).toBe(MAX_JSON_DEPTH);
    expect(out).toBe(TOO_DEEP);
    // Within the limit nothing changes.
    let shallow: unknown = 'end';
    for (let i = 0; i < MAX_JSON_DEPTH; i++) shallow = [shallow];
    expect(redact(shallow)).toEqual(shallow);
  });

  it('rejects a cycle as invalid_payload', () => {
    const a: Record<string, unknown> = {};
    a.self = a;
    expect(() => redact(a)).toThrow(BreakwaterError);
  });
});

describe('isSecretKey', () => {
  it.each([
    'authorization',
    'Proxy-Authorization',
    'cookie',
    'set-cookie',
    'password',
    'db_passwd',
    'secret',
    'clientSecret',
    'token',
    'id_token',
    'api_key',
    'apiKey',
    'x-api-key',
    'APIKEY',
    'signature',
    'webhook-signature',
    'credentials',
  ])('%s is secret', (key) => expect(isSecretKey(key)).toBe(true));

  it.each(['max_tokens', 'secretary', 'key', 'api', 'signed_at', 'author', 'name', 'monkey'])(
    '%s is not',
    (key) => expect(isSecretKey(key)).toBe(false),
  );
});

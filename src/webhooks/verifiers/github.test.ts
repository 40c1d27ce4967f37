import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import { sign, verify } from '@octokit/webhooks-methods';
import { describe, expect, it } from 'vitest';
import { githubVerifier } from './github.js';
import { githubSignatureHeader } from './sign.js';
import { T, fieldsOf, invalid, optionError, rejectionOf } from './test-support.js';

// GitHub docs, "Validating webhook deliveries", testing the webhook payload validation.
const DOC = {
  secret: "It's a Secret to Everybody",
  body: 'Hello, World!',
  signature: 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
};
const NOW = T * 1000; // GitHub signs no time: nowMs is ignored

interface Definition {
  name: string;
  examples: unknown[];
}
const definitions = createRequire(import.meta.url)('@octokit/webhooks-examples') as Definition[];

describe("githubVerifier: GitHub's documented example", () => {
  const verifier = githubVerifier({ secrets: [DOC.secret] });

  it('verifies, returning the X-GitHub-Delivery id', () => {
    const headers = {
      'x-hub-signature-256': DOC.signature,
      'x-github-delivery': 'd1e5c0de-0000-4000-8000-000000000001',
    };
    expect(verifier.verify(Buffer.from(DOC.body), headers, NOW)).toStrictEqual({
      eventId: 'd1e5c0de-0000-4000-8000-000000000001',
    });
    expect(verifier.scheme).toBe('github');
  });

  it('without X-GitHub-Delivery: verified, no event id', () => {
    expect(
      verifier.verify(Buffer.from(DOC.body), { 'X-Hub-Signature-256': DOC.signature }, NOW),
    ).toStrictEqual({});
  });

  it("octokit's sign and githubSignatureHeader both reproduce it", async () => {
    expect(await sign(DOC.secret, DOC.body)).toBe(DOC.signature);
    expect(githubSignatureHeader(DOC.secret, DOC.body)).toBe(DOC.signature);
  });

  it('one flipped byte of the body or the signature fails', () => {
    const flipped = Buffer.from(DOC.body);
    flipped[0]! ^= 0x20; // 'H' → 'h'
    expect(
      fieldsOf(rejectionOf(() => verifier.verify(flipped, { 'x-hub-signature-256': DOC.signature }, NOW))),
    ).toEqual(invalid('github', 'no_match', 'no signature matches'));
    const otherSig = DOC.signature.slice(0, -1) + '6';
    expect(
      rejectionOf(() => verifier.verify(Buffer.from(DOC.body), { 'x-hub-signature-256': otherSig }, NOW))
        .message,
    ).toBe('no signature matches');
  });

  it('rotation: the documented secret second in the list still passes', () => {
    const rotated = githubVerifier({ secrets: ['the-new-secret', DOC.secret] });
    expect(
      rotated.verify(Buffer.from(DOC.body), { 'x-hub-signature-256': DOC.signature }, NOW),
    ).toStrictEqual({});
  });
});

describe("githubVerifier: GitHub's published example payloads (@octokit/webhooks-examples)", () => {
  const secret = 'breakwater-github-test-secret';
  const verifier = githubVerifier({ secrets: [secret] });
  const wanted = ['ping', 'push', 'issues', 'pull_request', 'installation', 'release'];
  const picked = wanted.map((name) => {
    const definition = definitions.find((d) => d.name === name);
    if (definition === undefined || definition.examples.length === 0) throw new Error(`no ${name} example`);
    return { name, text: JSON.stringify(definition.examples[0]) };
  });
  // The one example with non-ASCII text, whatever event it belongs to.
  const nonAscii = definitions
    .flatMap((d) => d.examples.map((e) => ({ name: d.name, text: JSON.stringify(e) })))
    .find((e) => Buffer.byteLength(e.text, 'utf8') !== e.text.length);

  it('there are examples to test, one of them with non-ASCII text', () => {
    expect(picked.every((p) => p.text.length > 100)).toBe(true);
    expect(nonAscii).toBeDefined();
  });

  for (const name of wanted) {
    it(`${name}: octokit-signed JSON text verifies; pretty-printed text does not`, async () => {
      const { text } = picked.find((p) => p.name === name)!;
      const signature = await sign(secret, text);
      const headers = {
        'x-hub-signature-256': signature,
        'x-github-event': name,
        'x-github-delivery': `delivery-${name}`,
      };
      expect(verifier.verify(Buffer.from(text, 'utf8'), headers, NOW)).toStrictEqual({
        eventId: `delivery-${name}`,
      });
      expect(await verify(secret, text, signature)).toBe(true);
      const pretty = Buffer.from(JSON.stringify(JSON.parse(text), null, 2), 'utf8');
      expect(rejectionOf(() => verifier.verify(pretty, headers, NOW)).message).toBe('no signature matches');
    });
  }

  it('the non-ASCII example verifies over its UTF-8 bytes', async () => {
    const text = nonAscii!.text;
    const headers = { 'x-hub-signature-256': await sign(secret, text) };
    expect(verifier.verify(Buffer.from(text, 'utf8'), headers, NOW)).toStrictEqual({});
    expect(rejectionOf(() => verifier.verify(Buffer.from(text, 'latin1'), headers, NOW)).code).toBe(
      'invalid_signature',
    );
  });
});

describe('githubVerifier: bytes octokit cannot see', () => {
  const secret = 'raw-bytes-secret';
  const verifier = githubVerifier({ secrets: [secret] });
  const hex = (body: Buffer): string => 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');

  it('invalid UTF-8: octokit verifies a different body against the same signature (both decode to U+FFFD); this does not', async () => {
    const a = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]); // {"a":"<0xff>"}
    const b = Buffer.from(a);
    b[6] = 0xfe;
    const signatureOfA = hex(a);
    expect(await verify(secret, b.toString('utf8'), signatureOfA)).toBe(false); // octokit hashes the decoded text…
    expect(await verify(secret, b.toString('utf8'), await sign(secret, a.toString('utf8')))).toBe(true); // …so A and B collide
    expect(verifier.verify(a, { 'x-hub-signature-256': signatureOfA }, NOW)).toStrictEqual({});
    expect(rejectionOf(() => verifier.verify(b, { 'x-hub-signature-256': signatureOfA }, NOW)).message).toBe(
      'no signature matches',
    );
  });

  it('an empty body verifies (octokit throws a TypeError for it)', async () => {
    const empty = Buffer.alloc(0);
    expect(verifier.verify(empty, { 'x-hub-signature-256': hex(empty) }, NOW)).toStrictEqual({});
    await expect(verify(secret, '', hex(empty))).rejects.toThrow(TypeError);
  });
});

describe('githubVerifier: malformed headers', () => {
  const verifier = githubVerifier({ secrets: [DOC.secret] });
  const digest = DOC.signature.slice('sha256='.length);
  const m = invalid(
    'github',
    'malformed_header',
    'malformed x-hub-signature-256 header: not sha256=<64 hex digits>',
  );
  const cases: [string, Record<string, string | string[] | undefined>, object][] = [
    ['no header', {}, invalid('github', 'missing_header', 'no signature header (x-hub-signature-256)')],
    [
      'only the legacy SHA-1 header',
      { 'x-hub-signature': 'sha1=' + '0'.repeat(40) },
      invalid('github', 'missing_header', 'no signature header (x-hub-signature-256)'),
    ],
    ['no prefix', { 'x-hub-signature-256': digest }, m],
    ['a sha1 prefix', { 'x-hub-signature-256': 'sha1=' + digest }, m],
    ['too short', { 'x-hub-signature-256': DOC.signature.slice(0, -2) }, m],
    ['not hex', { 'x-hub-signature-256': 'sha256=' + 'g'.repeat(64) }, m],
    [
      'sent twice',
      { 'x-hub-signature-256': [DOC.signature, DOC.signature] },
      invalid('github', 'malformed_header', 'malformed x-hub-signature-256 header: sent more than once'),
    ],
    [
      'delivery sent twice',
      { 'x-hub-signature-256': DOC.signature, 'x-github-delivery': ['a', 'b'] },
      invalid('github', 'malformed_header', 'malformed x-github-delivery header: sent more than once'),
    ],
  ];
  for (const [name, headers, expected] of cases) {
    it(name, () => {
      expect(fieldsOf(rejectionOf(() => verifier.verify(Buffer.from(DOC.body), headers, NOW)))).toEqual(
        expected,
      );
    });
  }
});

describe('githubVerifier: startup validation', () => {
  it.each([
    [
      [],
      'githubVerifier: secrets must be a non-empty array of secrets (several for rotation), got an empty array',
    ],
    [[DOC.secret, ''], "githubVerifier: secrets[1] must be a webhook secret, got '…' (empty)"],
    [
      [DOC.secret + '\n'],
      "githubVerifier: secrets[0] must be a webhook secret, got 'It's…' (leading or trailing whitespace; a pasted newline?)",
    ],
    [[null], 'githubVerifier: secrets[0] must be a webhook secret, got null'],
  ])('%j', (secrets, message) => {
    expect(optionError(() => githubVerifier({ secrets: secrets as string[] }))).toBe(message);
  });
});

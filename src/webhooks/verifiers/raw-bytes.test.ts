import { createHmac } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  githubVerifier,
  hmacVerifier,
  standardWebhooksVerifier,
  stripeVerifier,
  type WebhookHeaders,
  type WebhookVerifier,
} from './index.js';
import { ODD_BODY, T, fieldsOf, invalid, optionError, rejectionOf } from './test-support.js';

/**
 * Each verifier over the exact received bytes (docs/webhooks.md#verifiers): signatures made independently of
 * the code under test (the official libraries, or node:crypto by hand) over a body no serializer reproduces.
 */

const NOW = T * 1000;
const SW_SECRET = 'whsec_' + Buffer.from('breakwater raw bytes key, 32 b!!').toString('base64');
const STRIPE_SECRET = 'whsec_raw_bytes_stripe';
const GITHUB_SECRET = 'raw-bytes-github';
const HMAC_SECRET = 'raw-bytes-hmac';

interface Case {
  readonly verifier: WebhookVerifier;
  /** Headers signing `body`, made outside the code under test. */
  headersFor(body: Buffer): Promise<WebhookHeaders>;
}

const cases: Case[] = [
  {
    verifier: standardWebhooksVerifier({ secrets: [SW_SECRET] }),
    async headersFor(body) {
      const signature = new Webhook(SW_SECRET).sign('msg_raw', new Date(NOW), body);
      return { 'webhook-id': 'msg_raw', 'webhook-timestamp': String(T), 'webhook-signature': signature };
    },
  },
  {
    verifier: stripeVerifier({ secrets: [STRIPE_SECRET] }),
    async headersFor(body) {
      const hex = createHmac('sha256', STRIPE_SECRET).update(`${T}.`).update(body).digest('hex');
      return { 'stripe-signature': `t=${T},v1=${hex}` };
    },
  },
  {
    verifier: githubVerifier({ secrets: [GITHUB_SECRET] }),
    async headersFor(body) {
      return {
        'x-hub-signature-256': await sign(GITHUB_SECRET, body.toString('utf8')),
        'x-github-delivery': 'gh-1',
      };
    },
  },
  {
    verifier: hmacVerifier({
      secrets: [HMAC_SECRET],
      header: 'x-sig',
      timestampHeader: 'x-ts',
      encoding: 'base64',
    }),
    async headersFor(body) {
      const sig = createHmac('sha256', HMAC_SECRET).update(`${T}.`).update(body).digest('base64');
      return { 'x-sig': sig, 'x-ts': String(T) };
    },
  },
];

describe.each(cases.map((c) => [c.verifier.scheme, c] as const))(
  '%s: raw bytes',
  (_scheme, { verifier, headersFor }) => {
    it('the odd body (1.0e+2, non-ASCII, tabs, CRLF, doubled spaces) verifies as received', async () => {
      const headers = await headersFor(ODD_BODY);
      expect(() => verifier.verify(ODD_BODY, headers, NOW)).not.toThrow();
    });

    it('the same event re-serialized by JSON.stringify does not', async () => {
      const headers = await headersFor(ODD_BODY);
      const reserialized = Buffer.from(JSON.stringify(JSON.parse(ODD_BODY.toString('utf8'))), 'utf8');
      expect(reserialized.equals(ODD_BODY)).toBe(false);
      expect(fieldsOf(rejectionOf(() => verifier.verify(reserialized, headers, NOW)))).toEqual(
        invalid(verifier.scheme, 'no_match', 'no signature matches'),
      );
    });

    it('one flipped byte, at any position, is invalid_signature', async () => {
      const headers = await headersFor(ODD_BODY);
      for (let i = 0; i < ODD_BODY.length; i++) {
        const flipped = Buffer.from(ODD_BODY);
        flipped[i]! ^= 0x01;
        expect(rejectionOf(() => verifier.verify(flipped, headers, NOW)).code).toBe('invalid_signature');
      }
    });

    it('a byte added or removed is invalid_signature', async () => {
      const headers = await headersFor(ODD_BODY);
      for (const changed of [ODD_BODY.subarray(0, -1), Buffer.concat([ODD_BODY, Buffer.from(' ')])]) {
        expect(rejectionOf(() => verifier.verify(changed, headers, NOW)).code).toBe('invalid_signature');
      }
    });
  },
);

describe('startup errors never echo a whole secret', () => {
  // Each secret is wrong for the factory it is given to; each error may show at most 4 leading characters.
  const withFine = (s: string[]): string[] => (Array.isArray(s) ? ['fine', ...s] : s);
  const factories: [string, string[], (secrets: string[]) => unknown][] = [
    [
      'standardWebhooksVerifier',
      ['whsec_Zq8x!not-base64!', 'Zq8xM2ZmYWtla2V5', 'whsec_Zq8xM2Zm\n', 'Zq8', 'Zq'],
      (s) => standardWebhooksVerifier({ secrets: s }),
    ],
    [
      'stripeVerifier',
      ['sk_live_Zq8xM2Zm', ' whsec_Zq8xM2Zm', 'Zq8', 'Zq'],
      (s) => stripeVerifier({ secrets: s }),
    ],
    ['githubVerifier', ['Zq8xM2Zm\n', '\tZq8xM2Zm'], (s) => githubVerifier({ secrets: withFine(s) })],
    ['hmacVerifier', ['Zq8xM2Zm ', '\nZq8xM2Zm'], (s) => hmacVerifier({ secrets: withFine(s), header: 'x' })],
  ];
  for (const [name, bad, make] of factories) {
    it(name, () => {
      for (const secret of bad) {
        const message = optionError(() => make([secret]));
        expect(message.startsWith(`${name}: secrets[`)).toBe(true);
        const shown = /got '([^']*)…'/s.exec(message)?.[1];
        expect(shown).toBeDefined();
        expect(secret.startsWith(shown!)).toBe(true);
        expect(shown!.length).toBeLessThanOrEqual(Math.min(4, secret.length / 2));
        expect(message).not.toContain('M2Zm');
      }
      // a lone string instead of a list: described by kind, never shown
      expect(optionError(() => make('whsec_Zq8xM2Zm' as never))).not.toContain('Zq8x');
    });
  }
});

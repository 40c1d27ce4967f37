/**
 * The caller of an AI request (docs/security.md#ai-gateway-limits-per-caller): the metadata rate and
 * spend rules scope by comes from the key, not from the client's `x-breakwater-metadata` (a trusted backend
 * may add to it); a key's own allowed models, rate rules and budgets apply to it alone, on top of the
 * gateway's rules. Over real HTTP with the official `openai` client, one API key per client (the test's
 * `onRequest` hook stands in for the HTTP edge and sets `request.principal` from the bearer value).
 */
import type { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { readSpendState, spendWindowStart, type RateRule } from '../../src/ai/index.js';
import { FakeClock, type Principal } from '../../src/core/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { post } from '../adversarial/ai-support.js';
import { deploy, routeGateway, sqliteStore, step } from './routes-support.js';
import { ask, clientFor, keyPrincipal, startGateway, startSim, tempDb, useCleanups } from './support.js';

const defer = useCleanups();
const MINUTE = 60_000;
const DAY = 86_400_000;
const PER_USER: RateRule = {
  name: 'per-user',
  limit: 2,
  windowMs: MINUTE,
  technique: 'fixed',
  scope: { by: 'metadata', key: 'user' },
};

type Outcome = number | string;

/** One request's status, or `<status> <error.code>` when refused. */
function outcome(p: Promise<unknown>): Promise<Outcome> {
  return p.then(
    () => 200,
    (e: unknown) => `${(e as APIError).status} ${String((e as APIError).code)}`,
  );
}

const PRINCIPALS = {
  alice: keyPrincipal('alice', { metadata: { user: 'alice' } }),
  mallory: keyPrincipal('mallory', { metadata: { user: 'mallory' } }),
  backend: keyPrincipal('backend', { metadata: { team: 'shop' }, trustedBackend: true }),
};

async function gateway(
  options: Parameters<typeof startGateway>[2] = {},
  principals: Readonly<Record<string, Principal>> = PRINCIPALS,
) {
  const sim = await startSim(defer);
  const running = await startGateway(defer, { sim }, { clock: new FakeClock(), ...options }, principals);
  return { sim, ...running };
}

describe('request metadata comes from the key', () => {
  it('rotating the user id in the header buys no requests: the header is refused (403 metadata_not_allowed)', async () => {
    const { url, sim } = await gateway({ rateRules: [PER_USER] });
    const mallory = clientFor(url, 'mallory');
    const results: Outcome[] = [];
    for (let i = 0; i < 3; i++) {
      results.push(
        await outcome(
          mallory.chat.completions.create(ask('sim/sim-1'), {
            headers: { 'x-breakwater-metadata': JSON.stringify({ user: `u${i}` }) },
          }),
        ),
      );
    }
    expect(results).toEqual(Array(3).fill('403 metadata_not_allowed'));
    // Without the header: counted under the key's own user, two a minute.
    for (let i = 0; i < 3; i++)
      results.push(await outcome(mallory.chat.completions.create(ask('sim/sim-1'))));
    expect(results.slice(3)).toEqual([200, 200, '429 rate_limited']);
    expect(sim.requests).toHaveLength(2);
  });

  it("sending a victim's user id does not lock the victim out", async () => {
    const { url } = await gateway({ rateRules: [PER_USER] });
    const mallory = clientFor(url, 'mallory');
    const asAlice = { headers: { 'x-breakwater-metadata': '{"user":"alice"}' } };
    for (let i = 0; i < 5; i++) await outcome(mallory.chat.completions.create(ask('sim/sim-1'), asAlice));
    // The shop's backend (a trusted key) calls on alice's behalf: her two requests a minute are still hers.
    const backend = clientFor(url, 'backend');
    expect([
      await outcome(backend.chat.completions.create(ask('sim/sim-1'), asAlice)),
      await outcome(backend.chat.completions.create(ask('sim/sim-1'), asAlice)),
    ]).toEqual([200, 200]);
  });

  it('the 403 is a problem document naming the header, with the OpenAI-shaped error', async () => {
    const { url } = await gateway();
    const answer = await post(url, ask('sim/sim-1'), {
      authorization: 'Bearer mallory',
      'x-breakwater-metadata': '{"user":"alice"}',
    });
    expect(answer.status).toBe(403);
    expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(answer.text)).toMatchObject({
      status: 403,
      code: 'unauthorized',
      reason: 'metadata_not_allowed',
      header: 'x-breakwater-metadata',
      error: { type: 'unauthorized', code: 'metadata_not_allowed', param: 'x-breakwater-metadata' },
    });
  });

  it('a trusted backend adds metadata with the header; a key bound to the key is not overridden (403)', async () => {
    const { url, sim } = await gateway({ rateRules: [PER_USER] });
    const backend = clientFor(url, 'backend');
    const as = (metadata: Record<string, string>) =>
      outcome(
        backend.chat.completions.create(ask('sim/sim-1'), {
          headers: { 'x-breakwater-metadata': JSON.stringify(metadata) },
        }),
      );
    // One counter per user it names: u1 twice, then refused; u2 still has its two.
    expect([await as({ user: 'u1' }), await as({ user: 'u1' }), await as({ user: 'u1' })]).toEqual([
      200,
      200,
      '429 rate_limited',
    ]);
    expect(await as({ user: 'u2', team: 'shop' })).toBe(200); // the bound value itself is no override
    expect(await as({ user: 'u2', team: 'other' })).toBe('403 metadata_key_bound');
    expect(sim.requests).toHaveLength(3);
  });

  it('a request without a principal (library use, no edge) keeps trusting the header', async () => {
    const { client } = await gateway({ rateRules: [PER_USER] });
    const as = (user: string) =>
      outcome(
        client.chat.completions.create(ask('sim/sim-1'), {
          headers: { 'x-breakwater-metadata': JSON.stringify({ user }) },
        }),
      );
    expect([await as('u1'), await as('u1'), await as('u1'), await as('u2')]).toEqual([
      200,
      200,
      '429 rate_limited',
      200,
    ]);
  });

  it("scope { by: 'principal' }: each key gets its own counter", async () => {
    const { url } = await gateway({
      rateRules: [
        { name: 'per-key', limit: 2, windowMs: MINUTE, technique: 'fixed', scope: { by: 'principal' } },
      ],
    });
    const run = async (key: string) => {
      const c = clientFor(url, key);
      const r: Outcome[] = [];
      for (let i = 0; i < 3; i++) r.push(await outcome(c.chat.completions.create(ask('sim/sim-1'))));
      return r;
    };
    expect(await run('alice')).toEqual([200, 200, '429 rate_limited']);
    expect(await run('mallory')).toEqual([200, 200, '429 rate_limited']);
  });
});

describe("a key's own AI limits", () => {
  const limited = keyPrincipal('limited', {
    ai: {
      allowedModels: ['sim/sim-1', 'dynamic/gifts'],
      rateRules: [{ limit: 2, windowMs: MINUTE }],
    },
  });
  const other = keyPrincipal('other');

  it('allowedModels: another model is 403 model_not_allowed before anything is counted or called', async () => {
    const { url, sim } = await gateway({}, { limited, other });
    const c = clientFor(url, 'limited');
    const error = (await c.chat.completions.create(ask('sim/sim-2')).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(403);
    expect(error.code).toBe('model_not_allowed');
    expect(error.message).toMatch(/sim\/sim-2/);
    expect(await outcome(c.chat.completions.create(ask('dynamic/other')))).toBe('403 model_not_allowed');
    expect(sim.requests).toHaveLength(0);
    expect(await outcome(clientFor(url, 'other').chat.completions.create(ask('sim/sim-2')))).toBe(200);
  });

  it("its rate rules count its requests alone, on top of the gateway's; another key is not limited by them", async () => {
    const clock = new FakeClock();
    const { url } = await gateway(
      {
        clock,
        rateRules: [
          { name: 'all', limit: 100, windowMs: MINUTE, technique: 'fixed', scope: { by: 'provider' } },
        ],
      },
      { limited, other },
    );
    const c = clientFor(url, 'limited');
    const results: Outcome[] = [];
    for (let i = 0; i < 3; i++) results.push(await outcome(c.chat.completions.create(ask('sim/sim-1'))));
    expect(results).toEqual([200, 200, '429 rate_limited']);
    const refused = (await c.chat.completions.create(ask('sim/sim-1')).catch((e: unknown) => e)) as APIError;
    expect(refused.headers?.get('retry-after')).toBe('60');
    expect(refused.headers?.get('x-ratelimit-limit')).toBe('2');
    const o = clientFor(url, 'other');
    for (let i = 0; i < 5; i++) expect(await outcome(o.chat.completions.create(ask('sim/sim-1')))).toBe(200);
    clock.tick(MINUTE);
    expect(await outcome(c.chat.completions.create(ask('sim/sim-1')))).toBe(200);
  });

  it("its budgets: its own spend alone, in the store's counters; another key spends on", async () => {
    const clock = new FakeClock();
    const store = await openSqliteStore({ path: tempDb(defer, 'breakwater-ai'), clock });
    defer(() => store.close());
    // 50 output tokens at 2 USD per million: 100 micro-USD a request, estimated and real alike.
    const prices = { 'sim/sim-1': { inputPerMTok: 0, outputPerMTok: 2 } };
    const spender = keyPrincipal('spender', { ai: { budgets: [{ limitUsd: 0.0003, windowMs: DAY }] } });
    const { url } = await gateway({ clock, store, prices }, { spender, other });
    const c = clientFor(url, 'spender');
    const results: Outcome[] = [];
    for (let i = 0; i < 4; i++) {
      results.push(await outcome(c.chat.completions.create(ask('sim/sim-1', { max_tokens: 50 }))));
    }
    expect(results).toEqual([200, 200, 200, '429 spend_limited']);
    const refused = (await c.chat.completions
      .create(ask('sim/sim-1', { max_tokens: 50 }))
      .catch((e: unknown) => e)) as APIError;
    expect(refused.headers?.get('retry-after')).toBe(String(DAY / 1000));
    const o = clientFor(url, 'other');
    for (let i = 0; i < 5; i++) {
      expect(await outcome(o.chat.completions.create(ask('sim/sim-1', { max_tokens: 50 })))).toBe(200);
    }
    const start = spendWindowStart(clock.now(), DAY);
    const key = `ai:spend:key-spend-fixed-${DAY}:v:${encodeURIComponent('key:spender')}:${start}`;
    expect(readSpendState(await store.counters.get(key))).toEqual({
      spentMicroUsd: 300,
      reservedMicroUsd: 0,
    });
  });

  it('a sliding budget: never more than its limit in any trailing window', async () => {
    const clock = new FakeClock();
    const prices = { 'sim/sim-1': { inputPerMTok: 0, outputPerMTok: 2 } };
    const spender = keyPrincipal('spender', {
      ai: { budgets: [{ limitUsd: 0.0002, windowMs: 10 * MINUTE, window: 'sliding' }] },
    });
    const { url } = await gateway({ clock, prices }, { spender });
    const c = clientFor(url, 'spender');
    const one = () => outcome(c.chat.completions.create(ask('sim/sim-1', { max_tokens: 50 })));
    clock.tick(9 * MINUTE);
    expect([await one(), await one()]).toEqual([200, 200]);
    clock.tick(2 * MINUTE); // minute 11: a fixed window would have started afresh at minute 10
    expect(await one()).toBe('429 spend_limited');
    clock.tick(9 * MINUTE); // minute 20: the spend of minute 9 is out of every window that starts now
    expect(await one()).toBe(200);
  });

  it("through a route: the key's own rules count each step once; the route's conditions see the key's metadata", async () => {
    const sim = await startSim(defer);
    const store = await sqliteStore(defer);
    await deploy(store, 'gifts', {
      type: 'limit',
      rule: {
        kind: 'rate',
        name: 'route-wide',
        limit: 100,
        windowMs: MINUTE,
        technique: 'fixed',
        scope: { by: 'provider' },
      },
      then: {
        type: 'conditional',
        branches: [{ when: { plan: 'pro' }, then: step('pro') }],
        default: step('basic'),
      },
      else: step('cheap'),
    });
    const pro = keyPrincipal('pro', {
      metadata: { plan: 'pro' },
      ai: { rateRules: [{ limit: 2, windowMs: MINUTE }] },
    });
    const { url } = await routeGateway(defer, { sim }, store, {
      gateway: { clock: new FakeClock() },
      principals: { pro, other },
    });
    const send = (key: string) =>
      clientFor(url, key)
        .chat.completions.create(ask('dynamic/gifts'))
        .withResponse()
        .then(({ response }) => response.headers.get('x-breakwater-step'))
        .catch((e: unknown) => `${(e as APIError).status} ${String((e as APIError).code)}`);
    // Its own limit refuses with a 429 (it is not the route's limit node, whose refusal would divert to else).
    expect([await send('pro'), await send('pro'), await send('pro')]).toEqual([
      'pro',
      'pro',
      '429 rate_limited',
    ]);
    expect(await send('other')).toBe('basic');
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { BreakwaterError, PRINCIPALS, PrincipalContext, webhookPrincipal } from '../core/index.js';
import { MAX_OWNER_LENGTH } from '../store/index.js';
import { harness, type Harness } from './test-support.js';

describe('jobs: the owner of an enqueued job', () => {
  let h: Harness;

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();
  });

  it('is the current principal by default, the given one when set, and null outside any principal', async () => {
    h = await harness();
    h.jobs.defineJob('email', () => undefined);
    const outside = await h.jobs.enqueue('email', {});
    const asLocal = await PrincipalContext.run(PRINCIPALS.local, () => h.jobs.enqueue('email', {}));
    // A tool deep inside a request: the context flows through awaits.
    const nested = await PrincipalContext.run(webhookPrincipal('stripe'), async () => {
      await Promise.resolve();
      return h.jobs.enqueue('email', {});
    });
    const given = await PrincipalContext.run(PRINCIPALS.local, () =>
      h.jobs.enqueue('email', {}, { owner: 'key:k1' }),
    );
    const none = await PrincipalContext.run(PRINCIPALS.local, () =>
      h.jobs.enqueue('email', {}, { owner: null }),
    );
    const owners = await Promise.all([outside, asLocal, nested, given, none].map((id) => h.jobs.get(id)));
    expect(owners.map((job) => job!.owner)).toEqual([null, 'local', 'webhook:stripe', 'key:k1', null]);
    expect((await h.jobs.list({ owner: 'local' })).map((job) => job.id)).toEqual([asLocal]);
  });

  it('an enqueue that finds its idempotency key leaves the existing job and its owner', async () => {
    h = await harness();
    h.jobs.defineJob('email', () => undefined);
    const first = await h.jobs.enqueue('email', {}, { idempotencyKey: 'k', owner: 'key:a' });
    const again = await h.jobs.enqueue('email', {}, { idempotencyKey: 'k', owner: 'key:b' });
    expect(again).toBe(first);
    expect((await h.jobs.get(first))!.owner).toBe('key:a');
  });

  it.each([
    ['empty', ''],
    ['holding NUL', 'key:\0'],
    ['too long', 'k'.repeat(MAX_OWNER_LENGTH + 1)],
    ['not a string', 7],
  ])('an owner %s is invalid_payload 400 naming the field, nothing written', async (_, owner) => {
    h = await harness();
    h.jobs.defineJob('email', () => undefined);
    const error = await h.jobs.enqueue('email', {}, { owner: owner as string }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error).toMatchObject({
      code: 'invalid_payload',
      status: 400,
      message: `owner must be null or a principal id of 1 to ${MAX_OWNER_LENGTH} characters without NUL.`,
      details: { field: 'owner' },
    });
    expect(await h.jobs.list()).toEqual([]);
  });
});

/**
 * GiftGenius's deep analysis under a gift overload (docs/jobs.md#the-wait-a-failure-carries): the real
 * gateway on a FakeClock, the example gift service answering 503 through its fault switch, the official MCP
 * SDK client. The gift breaker (5 failures in a row, open 30 s) opens during the job's first attempt; the
 * job's next attempt runs when the breaker lets calls through again, not within seconds against it, and a job
 * that runs out of attempts says when to try again.
 *
 * The gift upstream's own retry waits on the FakeClock, so calls that reach the service are driven by small
 * ticks; from the moment the job waits, time moves by exact amounts.
 */
import { describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/index.js';
import { FakeClock } from '../../src/core/index.js';
import type { Upstream } from '../../src/upstream/index.js';
import {
  connect,
  startBackends,
  startGiftGenius,
  tempDb,
  useCleanups,
  type Backends,
  type McpClient,
} from './support.js';

const defer = useCleanups();

const REQUEST = { interests: ['music', 'cooking'], budget_usd: 80, recipient: 'Alex' };
/** The gift breaker's open time (upstreams.ts: 30 s). */
const OPEN_MS = 30_000;

interface Setup {
  clock: FakeClock;
  backends: Backends;
  gw: Gateway;
  mcp: McpClient;
  gift: Upstream;
}

async function setup(): Promise<Setup> {
  const clock = new FakeClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  const backends = await startBackends(defer);
  const gw = await startGiftGenius(defer, backends, {
    dbPath: tempDb(defer),
    settings: { stepMs: 0 },
    gateway: { clock, graceMs: 100 },
  });
  const gift = gw.parts.upstreams!.find((u) => u.name === 'gift')!;
  return { clock, backends, gw, mcp: await connect(defer, gw.mcpUrl), gift };
}

/** Moves the FakeClock 50 ms at a time (with a real pause for the sockets) until `check` holds. */
async function drive(clock: FakeClock, check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await clock.tickAsync(50);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Lets what is due now settle, without moving the FakeClock, until `check` holds. */
async function settle(clock: FakeClock, check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await clock.tickAsync(0);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/**
 * Three gift failures in a row (a `suggest_gifts` call of two tries, and one plain POST, which is not
 * retried), then the deep analysis: the second try of its first attempt is the fifth failure, which opens
 * the breaker. That failure itself is a 503 that says nothing of the breaker; the job must still not come
 * back before the breaker's open time ends. Resolves with the job id once the job waits for attempt 2.
 */
async function analysisOpensTheBreaker(s: Setup): Promise<string> {
  s.backends.services.gift.faults.set({ errorRate: 1 });
  let answer: { isError?: boolean } | undefined;
  const call = s.mcp.call('suggest_gifts', REQUEST).then((a) => (answer = a));
  await drive(s.clock, async () => answer !== undefined, 'suggest_gifts');
  await call;
  expect(answer?.isError).toBe(true);
  await expect(s.gift.post('/recommendations', REQUEST)).rejects.toMatchObject({ kind: 'transient' });
  expect(s.gift.breaker!.state().state).toBe('closed');
  const before = s.backends.giftProxy.requests();
  const jobId: string = (await s.mcp.call('start_deep_analysis', REQUEST)).structuredContent.job_id;
  await drive(
    s.clock,
    async () => {
      const job = await s.gw.jobs.get(jobId);
      return job?.status === 'pending' && job.attempts === 1;
    },
    'the first attempt to fail',
  );
  // Both tries reached the service: the breaker opened on the last one, not before it.
  expect(s.backends.giftProxy.requests()).toBe(before + 2);
  return jobId;
}

describe('the deep analysis under a gift overload', () => {
  it('waits out the breaker its first attempt opened, then succeeds on its second attempt', async () => {
    const s = await setup();
    const jobId = await analysisOpensTheBreaker(s);
    const breaker = s.gift.breaker!.state();
    expect(breaker.state).toBe('open');
    const halfOpenAt = breaker.halfOpenAt!;
    expect(halfOpenAt).toBe(breaker.openedAt! + OPEN_MS);
    const waiting = (await s.gw.jobs.get(jobId))!;
    // The backoff alone (2.5-5 s) would have run it against the open breaker.
    expect(waiting).toMatchObject({ runAt: halfOpenAt, error: { retryAt: halfOpenAt } });

    const left = halfOpenAt - s.clock.now();
    expect(left).toBeGreaterThan(OPEN_MS - 5_000);
    const status = (await s.mcp.call('get_job_status', { job_id: jobId })).structuredContent;
    expect(status).toMatchObject({ status: 'pending', attempts: 1 });
    expect(status.last_error).toMatchObject({ retryable: true, retry_after_ms: left });
    expect(status.last_error.message).toContain(`try again in about ${Math.ceil(left / 1_000)} seconds`);

    // The gift service recovers within the open time; nothing is attempted before it ends.
    s.backends.services.gift.faults.clear();
    const before = s.backends.giftProxy.requests();
    await s.clock.tickAsync(left - 1);
    await settle(s.clock, async () => true, 'nothing');
    expect((await s.gw.jobs.get(jobId))!.attempts).toBe(1);
    expect(s.backends.giftProxy.requests()).toBe(before);
    await s.clock.tickAsync(1);
    await settle(s.clock, async () => (await s.gw.jobs.get(jobId))!.status === 'completed', 'the job');

    const job = (await s.gw.jobs.get(jobId))!;
    expect(job).toMatchObject({ status: 'completed', attempts: 2, finishedAt: halfOpenAt });
    expect(s.backends.giftProxy.requests()).toBe(before + 1);
    const started = (await s.gw.store.events(jobId)).filter((e) => e.type === 'job.started');
    expect(started.map((e) => e.timestamp)).toEqual([waiting.createdAt, halfOpenAt]);
    expect(s.gift.breaker!.state().state).toBe('closed');
  });

  it('a gift service that stays down: each attempt waits out an open period, the final status says when to try again', async () => {
    const s = await setup();
    const jobId = await analysisOpensTheBreaker(s);
    const runAts: number[] = [];
    for (let attempt = 2; attempt <= 3; attempt++) {
      const waiting = (await s.gw.jobs.get(jobId))!;
      expect(waiting).toMatchObject({ status: 'pending', attempts: attempt - 1 });
      // The breaker's open period ends exactly when the job is due.
      expect(waiting.runAt).toBe(s.gift.breaker!.state().halfOpenAt);
      runAts.push(waiting.runAt);
      await s.clock.tickAsync(waiting.runAt - s.clock.now());
      await drive(
        s.clock,
        async () => {
          const job = (await s.gw.jobs.get(jobId))!;
          return job.attempts === attempt && job.status !== 'in_progress';
        },
        `attempt ${attempt}`,
      );
    }
    const failed = (await s.gw.jobs.get(jobId))!;
    expect(failed).toMatchObject({ status: 'failed', attempts: 3 });
    // Each trial failed and opened the breaker again: the next attempt came only when it ended.
    expect(runAts[1]! - runAts[0]!).toBeGreaterThanOrEqual(OPEN_MS);
    const halfOpenAt = s.gift.breaker!.state().halfOpenAt!;
    expect(failed.error!.retryAt).toBe(halfOpenAt);

    const left = halfOpenAt - s.clock.now();
    const status = (await s.mcp.call('get_job_status', { job_id: jobId })).structuredContent;
    expect(status.error).toMatchObject({ retryable: true, retry_after_ms: left, outcome: 'failed' });
    expect(status.error.message).toContain(`try again in about ${Math.ceil(left / 1_000)} seconds`);
    await s.clock.tickAsync(left);
    const later = (await s.mcp.call('get_job_status', { job_id: jobId })).structuredContent;
    expect(later.error.retry_after_ms).toBe(0);
    expect(later.error.message).toContain('try again shortly');
  });
});

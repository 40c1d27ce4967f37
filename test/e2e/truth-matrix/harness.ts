/**
 * One clean cell of the matrix: the three example services (counting proxies in front of gift and commerce),
 * a GiftGenius gateway on its own SQLite file and a stepped FakeClock, and the SDK's client. `arrange` sets a
 * fault through the services' switches only (a breaker is opened and a bulkhead filled by real calls).
 */
import { createGiftGeniusApp } from '../../../examples/giftgenius/app.js';
import {
  startGiftGeniusServices,
  type GiftGeniusServices,
} from '../../../examples/giftgenius/services/index.js';
import { startGateway, type Gateway } from '../../../src/gateway/index.js';
import type { JobRecord } from '../../../src/entries/jobs.js';
import {
  connect,
  countingProxy,
  getJson,
  tempDb,
  until,
  type CountingProxy,
  type McpClient,
  type ToolAnswer,
} from '../support.js';
import { steppedClock, type SteppedClock } from './clock.js';
import { MATRIX_SETTINGS, RETRY_AFTER_S, type FaultId, type ToolName } from './expectations.js';

type Defer = (cleanup: () => unknown) => void;

export interface Rig {
  gw: Gateway;
  mcp: McpClient;
  services: GiftGeniusServices;
  proxies: { gift: CountingProxy; commerce: CountingProxy };
  time: SteppedClock;
}

/** Starts a clean rig; everything is closed after the test (the clock last). */
export async function startRig(defer: Defer): Promise<Rig> {
  const time = steppedClock();
  defer(() => time.stop());
  const services = await startGiftGeniusServices({});
  defer(() => services.close());
  const gift = await countingProxy(services.gift.url);
  defer(() => gift.close());
  const commerce = await countingProxy(services.commerce.url);
  defer(() => commerce.close());
  const gw = await startGateway({
    app: createGiftGeniusApp({
      ...MATRIX_SETTINGS,
      giftUrl: gift.url,
      commerceUrl: commerce.url,
      analyticsUrl: services.analytics.url,
    }),
    store: tempDb(defer),
    port: 0,
    log: () => undefined,
    clock: time.clock,
    graceMs: 200,
  });
  defer(() => gw.close());
  const mcp = await connect(defer, gw.mcpUrl);
  // Runs first: a test that failed while time stood still must not leave the shutdown waiting on it.
  defer(() => time.resume());
  return { gw, mcp, services, proxies: { gift, commerce }, time };
}

/** The arguments each tool is called with; `customer_id` marks the orders the matrix places. */
export const ARGS: Record<ToolName, Record<string, unknown>> = {
  suggest_gifts: { interests: ['coffee', 'travel'], budget_usd: 40 },
  checkout: { product_id: 'p001', quantity: 1, customer_id: 'cus_matrix' },
  suggest_and_checkout: { interests: ['tea'], budget_usd: 30, customer_id: 'cus_matrix' },
  start_deep_analysis: { interests: ['music', 'cooking'], budget_usd: 80, recipient: 'Alex' },
};

/**
 * A fault in place. `release()` ends what must not outlast the cell's first try (the calls holding a
 * bulkhead, and time standing still for them); other faults stay until the test clears them.
 */
export interface Arranged {
  release(): Promise<void>;
}

/** Puts `fault` in place on a fresh rig. */
export async function arrange(rig: Rig, fault: FaultId): Promise<Arranged> {
  const { gift, commerce, analytics } = rig.services;
  const done: Arranged = { release: async () => undefined };
  const { giftTimeoutMs, commerceTimeoutMs } = MATRIX_SETTINGS;
  switch (fault) {
    case 'none':
      return done;
    case 'gift.hang':
      gift.faults.set({ hang: true });
      return done;
    case 'gift.slow':
      gift.faults.set({ latencyMs: giftTimeoutMs * 1.25 });
      return done;
    case 'gift.500':
      gift.faults.set({ status: 500 });
      return done;
    case 'gift.503':
    case 'gift.429': {
      const status = fault === 'gift.503' ? 503 : 429;
      gift.faults.set({ status, retryAfterS: RETRY_AFTER_S[status] });
      return done;
    }
    case 'gift.open':
      // Five failures in a row open it: two calls of two attempts, then the first attempt of a third.
      gift.faults.set({ status: 500 });
      await untilOpen(rig, 'gift', () => rig.mcp.call('suggest_gifts', ARGS.suggest_gifts));
      gift.faults.clear();
      return done;
    case 'gift.full':
      return fill(rig, 'gift', 'suggest_gifts', { maxConcurrent: 10, maxQueue: 20 });
    case 'commerce.hang':
      commerce.faults.set({ hang: true });
      return done;
    case 'commerce.slow':
      commerce.faults.set({ latencyMs: commerceTimeoutMs * 1.25 });
      return done;
    case 'commerce.500':
      commerce.faults.set({ status: 500 });
      return done;
    case 'commerce.503':
    case 'commerce.429': {
      const status = fault === 'commerce.503' ? 503 : 429;
      commerce.faults.set({ status, retryAfterS: RETRY_AFTER_S[status] });
      return done;
    }
    case 'commerce.open':
      // Refused orders (503, nothing stored) until three failures in a row open it.
      commerce.faults.set({ status: 503 });
      await untilOpen(rig, 'commerce', () => rig.mcp.call('checkout', ARGS.checkout));
      commerce.faults.clear();
      return done;
    case 'commerce.full':
      return fill(rig, 'commerce', 'checkout', { maxConcurrent: 3, maxQueue: 5 });
    case 'commerce.400':
      commerce.faults.set({ status: 400 });
      return done;
    case 'commerce.lost':
      commerce.faults.set({ commitThenDrop: true });
      return done;
    case 'commerce.lost_lookup':
      commerce.faults.set({ commitThenDrop: true, status: 503, statusOn: 'reads' });
      return done;
    case 'analytics.hang':
      analytics.faults.set({ hang: true });
      return done;
    case 'analytics.400':
      analytics.faults.set({ status: 400 });
      return done;
  }
}

/** Calls `fail` until the gateway's `/readyz` lists `name`'s breaker open (at most five calls). */
async function untilOpen(rig: Rig, name: string, fail: () => Promise<ToolAnswer>): Promise<void> {
  for (let calls = 0; calls < 5; calls++) {
    const answer = await fail();
    if (answer.isError !== true) throw new Error(`arranging ${name}'s open breaker: a call succeeded`);
    if (await breakerOpen(rig, name)) return;
  }
  throw new Error(`${name}'s breaker did not open after five failed calls`);
}

export async function breakerOpen(rig: Rig, name: string): Promise<boolean> {
  const { body } = await getJson(`${rig.gw.url}/readyz`);
  return body.open_breakers.some(
    (b: { name: string; state: string }) => b.name === name && b.state === 'open',
  );
}

/**
 * Fills `dependency`'s bulkhead (every slot and queue place) with calls of `tool` that the service holds
 * (`hang`). Time stands still until `release()`: no attempt times out and no queued call gives up, so the
 * bulkhead stays full whatever the machine's speed. `release()` lets the service answer them, waits for them
 * (all must succeed) and lets time run again.
 */
async function fill(
  rig: Rig,
  dependency: 'gift' | 'commerce',
  tool: ToolName,
  limits: { maxConcurrent: number; maxQueue: number },
): Promise<Arranged> {
  rig.time.pause();
  rig.services[dependency].faults.set({ hang: true });
  const holders = Array.from({ length: limits.maxConcurrent + limits.maxQueue }, (_, i) =>
    rig.mcp.call(tool, { ...ARGS[tool], ...(tool === 'checkout' ? { customer_id: `cus_holder_${i}` } : {}) }),
  );
  await until(async () => {
    const gauges = await bulkhead(rig, dependency);
    return gauges.inUse === limits.maxConcurrent && gauges.queued === limits.maxQueue;
  }, `${dependency}'s bulkhead to fill`);
  return {
    async release() {
      rig.services[dependency].faults.clear();
      const answers = await Promise.all(holders);
      rig.time.resume();
      const failed = answers.find((a) => a.isError === true);
      if (failed !== undefined) throw new Error(`a bulkhead holder failed: ${failed.content[0]?.text}`);
    },
  };
}

/** The bulkhead gauges of `dependency` as `/metrics` serves them. */
async function bulkhead(rig: Rig, dependency: string): Promise<{ inUse: number; queued: number }> {
  const text = await (await fetch(`${rig.gw.url}/metrics`)).text();
  const read = (name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`breakwater_${name}{dependency="${dependency}"}`));
    return line === undefined ? Number.NaN : Number(line.split(' ').at(-1));
  };
  return { inUse: read('bulkhead_in_use'), queued: read('bulkhead_queued') };
}

/**
 * Waits until the job is finished, jumping time to each retry's due time instead of waiting for it (a
 * breaker's open period, a Retry-After). Resolves with the record and the clock's time after the last jump
 * (the final run started after it).
 */
export async function finishJob(rig: Rig, jobId: string): Promise<{ job: JobRecord; lastRunFrom: number }> {
  const { clock } = rig.time;
  let lastRunFrom = clock.now();
  const deadline = Date.now() + 8_000;
  for (;;) {
    const job = await rig.gw.store.get(jobId);
    if (job === undefined) throw new Error(`job ${jobId} is gone`);
    if (job.status === 'completed' || job.status === 'failed' || job.status === 'canceled') {
      return { job, lastRunFrom };
    }
    if (job.status === 'pending' && job.attempts > 0 && job.runAt > clock.now()) {
      await rig.time.jump(job.runAt - clock.now());
      lastRunFrom = clock.now();
    }
    if (Date.now() > deadline) throw new Error(`job ${jobId} did not finish: ${job.status}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Switches every fault of the three services off. */
export function clearFaults(rig: Rig): void {
  for (const service of [rig.services.gift, rig.services.commerce, rig.services.analytics]) {
    service.faults.clear();
  }
}

/** Every order the commerce service holds. */
export async function orders(rig: Rig): Promise<Array<Record<string, unknown>>> {
  return (await getJson(`${rig.services.commerce.url}/orders`)).body.orders;
}

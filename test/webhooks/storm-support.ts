/**
 * The storm of the storm and crash tests (not a test file itself): a shuffled mix of signed deliveries,
 * duplicates and bad signatures, sent over many connections by a sender that behaves like a payment
 * platform: it retries a 429 or 503 after its `Retry-After`, and every other answer is final.
 */
import { Pool } from 'undici';
import { STRIPE_SECRET, stripeSignature } from './signing.js';
import { seeded } from '../support/random.js';

export interface Delivery {
  eventId: string;
  body: string;
  signature: string;
  /** Signed with a secret the gateway does not know. */
  bad: boolean;
}

export interface StormPlan {
  deliveries: Delivery[];
  /** The distinct event ids sent with a good signature. */
  goodIds: string[];
  badIds: string[];
}

/** A deterministic PRNG (mulberry32), so a failing storm can be replayed. */
export const prng = seeded;

/**
 * `total` deliveries: `duplicateShare` of them repeat an earlier event, `badShare` carry a bad signature (on
 * event ids never sent validly), the rest are distinct events; shuffled. Each event names an order (one of
 * `orders`) so the ordering key is exercised.
 */
export function planStorm(
  total: number,
  options: { duplicateShare: number; badShare: number; orders: number; seed: number },
): StormPlan {
  const random = prng(options.seed);
  const bad = Math.round(total * options.badShare);
  const duplicates = Math.round(total * options.duplicateShare);
  const unique = total - bad - duplicates;
  const signedAt = Date.now();
  const make = (eventId: string, isBad: boolean): Delivery => {
    const order = `ord_${Math.floor(random() * options.orders)}`;
    const body = JSON.stringify({
      id: eventId,
      object: 'event',
      type: random() < 0.8 ? 'payment_intent.succeeded' : 'payment_intent.payment_failed',
      created: Math.floor(signedAt / 1000),
      data: { object: { id: `pi_${eventId}`, metadata: { order_id: order } } },
    });
    const secret = isBad ? 'whsec_an_attacker_guess' : STRIPE_SECRET;
    return { eventId, body, signature: stripeSignature(body, secret, signedAt), bad: isBad };
  };
  const goods = Array.from({ length: unique }, (_, i) => make(`evt_${options.seed}_${i}`, false));
  const deliveries = [...goods];
  for (let i = 0; i < duplicates; i++) deliveries.push(goods[Math.floor(random() * unique)]!);
  const bads = Array.from({ length: bad }, (_, i) => make(`evt_bad_${options.seed}_${i}`, true));
  deliveries.push(...bads);
  for (let i = deliveries.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [deliveries[i], deliveries[j]] = [deliveries[j]!, deliveries[i]!];
  }
  return { deliveries, goodIds: goods.map((d) => d.eventId), badIds: bads.map((d) => d.eventId) };
}

/** What the sender saw. */
export interface StormReport {
  /** Final answers by status (after retries). */
  finalByStatus: Record<number, number>;
  /** Event ids that got a 2xx at least once. */
  acknowledged: Set<string>;
  /** 2xx answers that said `duplicate: false`, per event id. */
  firstAccepts: Map<string, number>;
  /** 429 and 503 answers (each retried), and how many of them had no Retry-After. */
  limited: { 429: number; 503: number; withoutRetryAfter: number };
  badAccepted: string[];
  /** Requests that failed at the transport (the server went away). */
  transportErrors: number;
}

/**
 * Sends every delivery of `plan` to `url` + `/webhooks/<source>` over `connections` connections at once,
 * retrying 429/503 after their Retry-After (each retry waits its turn behind fresh deliveries). Stops early,
 * without error, once `stop()` says so (the crash test kills the server mid-storm).
 */
export async function sendStorm(
  url: string,
  source: string,
  plan: StormPlan,
  options: {
    connections: number;
    onAck?: (eventId: string) => void;
    /** Called on every 429 or 503. */
    onLimited?: (status: 429 | 503) => void;
    stop?: () => boolean;
  },
): Promise<StormReport> {
  const pool = new Pool(url, { connections: options.connections, pipelining: 1 });
  const report: StormReport = {
    finalByStatus: {},
    acknowledged: new Set(),
    firstAccepts: new Map(),
    limited: { 429: 0, 503: 0, withoutRetryAfter: 0 },
    badAccepted: [],
    transportErrors: 0,
  };
  const queue = plan.deliveries;
  let next = 0;
  const later: { delivery: Delivery; at: number }[] = [];
  let inFlight = 0;
  const path = `/webhooks/${source}`;

  async function sendOne(delivery: Delivery): Promise<void> {
    inFlight++;
    try {
      const response = await pool.request({
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': delivery.signature },
        body: delivery.body,
      });
      const text = await response.body.text();
      const status = response.statusCode;
      if (status === 429 || status === 503) {
        report.limited[status]++;
        options.onLimited?.(status);
        const retryAfter = Number(response.headers['retry-after']);
        if (!(retryAfter >= 1)) report.limited.withoutRetryAfter++;
        later.push({ delivery, at: Date.now() + (retryAfter >= 1 ? retryAfter : 1) * 1000 });
        return;
      }
      report.finalByStatus[status] = (report.finalByStatus[status] ?? 0) + 1;
      if (status >= 200 && status < 300) {
        if (delivery.bad) report.badAccepted.push(delivery.eventId);
        report.acknowledged.add(delivery.eventId);
        options.onAck?.(delivery.eventId);
        const answer = JSON.parse(text) as { duplicate: boolean };
        if (!answer.duplicate) {
          report.firstAccepts.set(delivery.eventId, (report.firstAccepts.get(delivery.eventId) ?? 0) + 1);
        }
      }
    } catch {
      report.transportErrors++;
    } finally {
      inFlight--;
    }
  }

  async function worker(): Promise<void> {
    for (;;) {
      if (options.stop?.()) return;
      if (next < queue.length) {
        await sendOne(queue[next++]!);
        continue;
      }
      const now = Date.now();
      const due = later.findIndex((l) => l.at <= now);
      if (due >= 0) {
        await sendOne(later.splice(due, 1)[0]!.delivery);
        continue;
      }
      if (later.length === 0 && inFlight === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  try {
    await Promise.all(Array.from({ length: options.connections }, worker));
  } finally {
    await pool.destroy();
  }
  return report;
}

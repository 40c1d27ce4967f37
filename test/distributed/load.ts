/**
 * The load of the distributed proof (not a test file): payment webhooks spread over the gateways with
 * duplicates sent to other gateways than the first copy, and AI requests of one user over every gateway.
 * Senders behave like a platform behind a load balancer: a 429 or 503 is retried after its Retry-After, a
 * connection that fails (a gateway that died) is retried on the next gateway, every other answer is final.
 */
import { Pool } from 'undici';
import { paymentDelivery } from '../../examples/giftgenius/webhooks.js';
import { prng } from '../webhooks/storm-support.js';

/** One delivery: an event, the gateway it is sent to first. */
export interface Delivery {
  eventId: string;
  orderId: string;
  gateway: number;
}

/**
 * `events` distinct `payment_intent.succeeded` events, the first copy of event i to gateway i mod
 * `gateways`, plus `duplicates` copies of random events each to a gateway other than its first copy's;
 * shuffled (seeded), so a duplicate may race its original on another gateway.
 */
export function planDeliveries(
  events: number,
  options: { duplicates: number; gateways: number; orders: readonly string[]; seed: number },
): Delivery[] {
  const random = prng(options.seed);
  const pick = (n: number) => Math.floor(random() * n);
  const firsts: Delivery[] = Array.from({ length: events }, (_, i) => ({
    eventId: `evt_proof_${options.seed}_${i}`,
    orderId: options.orders[pick(options.orders.length)]!,
    gateway: i % options.gateways,
  }));
  const all = [...firsts];
  for (let i = 0; i < options.duplicates; i++) {
    const original = firsts[pick(events)]!;
    const gateway = (original.gateway + 1 + pick(options.gateways - 1)) % options.gateways;
    all.push({ ...original, gateway });
  }
  for (let i = all.length - 1; i > 0; i--) {
    const j = pick(i + 1);
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all;
}

/** What the webhook sender saw. */
export interface WebhookReport {
  /** Event ids answered 2xx at least once. */
  acknowledged: Set<string>;
  /** 2xx answers with `duplicate: false`, per event id (more than one: a duplicate was enqueued twice). */
  firstAccepts: Map<string, number>;
  /** Final answers by status. */
  finalByStatus: Record<number, number>;
  /** Answers 429/503 (retried) and connections that failed (retried on the next gateway). */
  retried: { limited: number; transport: number };
}

/** One pool per gateway URL; the same pool reaches a restarted gateway on its old port. */
function pools(urls: readonly string[], connections: number): Pool[] {
  return urls.map((url) => new Pool(url, { connections, pipelining: 1, connectTimeout: 2_000 }));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends every delivery of `plan` (signed at send time with `secret`), `lanes` at once, to
 * `/webhooks/payments` of its gateway; `onAck` hears each event id answered 2xx.
 */
export async function sendWebhooks(
  urls: readonly string[],
  plan: readonly Delivery[],
  options: { secret: string; lanes: number; onAck?: (eventId: string, acked: number) => void },
): Promise<WebhookReport> {
  const gateways = pools(urls, Math.ceil(options.lanes / urls.length) + 2);
  const report: WebhookReport = {
    acknowledged: new Set(),
    firstAccepts: new Map(),
    finalByStatus: {},
    retried: { limited: 0, transport: 0 },
  };
  let next = 0;
  async function deliver(delivery: Delivery): Promise<void> {
    let gateway = delivery.gateway;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 200) throw new Error(`webhook ${delivery.eventId}: no final answer after 200 attempts`);
      const { body, headers } = paymentDelivery(options.secret, {
        id: delivery.eventId,
        type: 'payment_intent.succeeded',
        orderId: delivery.orderId,
        customerId: 'cus_proof',
        amountCents: 1_999,
      });
      let status: number;
      let text: string;
      let retryAfter: number;
      try {
        const response = await gateways[gateway]!.request({
          path: '/webhooks/payments',
          method: 'POST',
          headers,
          body,
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        status = response.statusCode;
        text = await response.body.text();
        retryAfter = Number(response.headers['retry-after']);
      } catch {
        report.retried.transport++;
        gateway = (gateway + 1) % gateways.length;
        await sleep(50);
        continue;
      }
      if (status === 429 || status === 503) {
        report.retried.limited++;
        await sleep((retryAfter >= 0 ? retryAfter : 1) * 1_000);
        continue;
      }
      report.finalByStatus[status] = (report.finalByStatus[status] ?? 0) + 1;
      if (status >= 200 && status < 300) {
        report.acknowledged.add(delivery.eventId);
        if ((JSON.parse(text) as { duplicate?: boolean }).duplicate !== true) {
          report.firstAccepts.set(delivery.eventId, (report.firstAccepts.get(delivery.eventId) ?? 0) + 1);
        }
        options.onAck?.(delivery.eventId, report.acknowledged.size);
      }
      return;
    }
  }
  const lane = async () => {
    while (next < plan.length) await deliver(plan[next++]!);
  };
  try {
    await Promise.all(Array.from({ length: options.lanes }, lane));
  } finally {
    await Promise.all(gateways.map((pool) => pool.destroy()));
  }
  return report;
}

/** One AI request as the client saw it: the status of each try (`error` for a failed connection). */
export interface AiOutcome {
  sentAt: number;
  tries: Array<number | 'error'>;
}

/**
 * `total` chat completions for `user`, request i to gateway i mod `urls.length`, one every `spacingMs`
 * (not waiting for answers); a failed connection is tried on the next gateway (at most 5 tries).
 */
export async function sendAiRequests(
  urls: readonly string[],
  options: { total: number; spacingMs: number; user: string },
): Promise<AiOutcome[]> {
  const gateways = pools(urls, 8);
  const one = async (i: number): Promise<AiOutcome> => {
    await sleep(i * options.spacingMs);
    const outcome: AiOutcome = { sentAt: Date.now(), tries: [] };
    let gateway = i % gateways.length;
    while (outcome.tries.length < 5) {
      try {
        const response = await gateways[gateway]!.request({
          path: '/v1/chat/completions',
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-breakwater-metadata': JSON.stringify({ user: options.user }),
          },
          body: JSON.stringify({
            model: 'sim/gift-ranker-mini',
            messages: [{ role: 'user', content: `gift idea ${i}` }],
            max_tokens: 4,
          }),
          headersTimeout: 15_000,
          bodyTimeout: 15_000,
        });
        await response.body.text();
        outcome.tries.push(response.statusCode);
        return outcome;
      } catch {
        outcome.tries.push('error');
        gateway = (gateway + 1) % gateways.length;
        await sleep(100);
      }
    }
    return outcome;
  };
  try {
    return await Promise.all(Array.from({ length: options.total }, (_, i) => one(i)));
  } finally {
    await Promise.all(gateways.map((pool) => pool.destroy()));
  }
}

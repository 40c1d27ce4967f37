/**
 * The operator's notices about work, from real parts: a webhook ingress served over HTTP (signed deliveries,
 * badly signed ones, a path naming no source), its handlers run as jobs on a SQLite store, and the notices'
 * own fake clock (their timestamps and minutes; the ingress and the jobs run on real time).
 */
import { describe, expect, it } from 'vitest';
import { watchOperatorEvents, textNotices } from '../../src/gateway/operator/index.js';
import { BreakwaterError, FakeClock } from '../../src/core/index.js';
import { defineWebhookSource, onWebhook, stripeVerifier } from '../../src/webhooks/index.js';
import {
  STRIPE_SECRET,
  deliverStripe,
  post,
  startIngress,
  stripeEvent,
  untilJobsFinished,
  useCleanups,
} from '../webhooks/support.js';

const defer = useCleanups();
const source = defineWebhookSource({
  name: 'payments',
  verifier: stripeVerifier({ secrets: [STRIPE_SECRET] }),
});

async function start() {
  const clock = new FakeClock();
  const lines: string[] = [];
  const running = await startIngress(defer, {
    sources: [source],
    handlers: [
      onWebhook('payments', 'charge.failed', ({ eventId }) => {
        throw new BreakwaterError('invalid_payload', {
          message: `The charge of ${eventId} names no customer.`,
        });
      }),
    ],
  });
  const watching = watchOperatorEvents({
    sink: textNotices((line) => lines.push(line), clock),
    clock,
    jobs: running.jobs,
    webhooks: running.ingress,
  });
  defer(() => watching.dispose());
  return { ...running, clock, lines };
}

const REJECTING =
  'webhook source payments rejecting deliveries: 5 within 1 min, the last 401 invalid_signature (check its signing secrets); nothing of them is stored, the sender decides whether to retry';

describe('operator notices: webhooks and dead letters', () => {
  it('a source rejecting deliveries: a line at the fifth rejection within a minute, then at most one a minute', async () => {
    const { url, clock, lines } = await start();
    const forged = (id: string) =>
      deliverStripe(url, 'payments', stripeEvent(id, 'charge.succeeded'), 'whsec_rotated');
    // Deliveries to a path naming no declared source are not counted (their names are the caller's).
    for (let i = 0; i < 5; i++) expect((await post(`${url}/webhooks/nope`, '{}')).status).toBe(404);
    for (let i = 0; i < 4; i++) expect((await forged(`evt_${i}`)).status).toBe(401);
    expect(lines).toEqual([]);
    await forged('evt_4');
    expect(lines).toEqual([`2026-01-01T00:00:00Z ${REJECTING}`]);
    for (let i = 5; i < 10; i++) await forged(`evt_${i}`);
    expect(lines).toHaveLength(1);

    // A minute later the earlier ones are out of the window: four more are not yet "repeatedly".
    await clock.tickAsync(60_000);
    for (let i = 10; i < 14; i++) await forged(`evt_${i}`);
    expect(lines).toHaveLength(1);
    await forged('evt_14');
    expect(lines).toEqual([`2026-01-01T00:00:00Z ${REJECTING}`, `2026-01-01T00:01:00Z ${REJECTING}`]);
  });

  it('jobs dead-lettered: a line each, three per job type a minute, the rest counted at the end of it', async () => {
    const { url, store, clock, lines } = await start();
    for (let i = 0; i < 5; i++) {
      expect((await deliverStripe(url, 'payments', stripeEvent(`evt_${i}`, 'charge.failed'))).status).toBe(
        200,
      );
    }
    const failed = await untilJobsFinished(store, 'webhook.payments', 5);
    expect(failed.map((job) => job.status)).toEqual(Array(5).fill('failed'));
    const expected = failed.map((job) => {
      expect(job.error?.message).toMatch(/^The charge of evt_[0-4] names no customer\.$/);
      return `2026-01-01T00:00:00Z job ${job.id} (webhook.payments) dead-lettered after 1 attempt: invalid_payload (${job.error?.message}); retry it: breakwater jobs retry ${job.id}`;
    });
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(expected).toContain(line);

    await clock.tickAsync(59_999);
    expect(lines).toHaveLength(3);
    await clock.tickAsync(1);
    expect(lines.slice(3)).toEqual([
      '2026-01-01T00:01:00Z 2 more webhook.payments jobs dead-lettered within 1 min not shown; list them: breakwater jobs list --status failed --type webhook.payments',
    ]);
  });
});

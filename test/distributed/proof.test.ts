import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { DEEP_ANALYSIS_JOB } from '../../examples/giftgenius/analysis.js';
import { loadCatalog, startGiftGeniusServices } from '../../examples/giftgenius/services/index.js';
import { startSimulatedProvider } from '../../examples/llm-sim/index.js';
import { verifyAudit } from '../../src/operations/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { type Store } from '../../src/store/index.js';
import { useCleanups } from '../support/cleanups.js';
import { TEST_DATABASE_URL, describePostgres, testSchemas } from '../support/postgres.js';
import { TEST_REDIS_URL, describeRedis } from '../support/redis.js';
import { auditActions, createOrders, paymentIntentsByKey, readStoreBooks } from './books.js';
import { freePorts, gatewayProcess, runCli, workerProcess, type BreakwaterProcess } from './cluster.js';
import { planDeliveries, sendAiRequests, sendWebhooks } from './load.js';

/**
 * The distributed mode's proof (docs/deploy.md#distributed-postgresql-redis-several-processes): 3 gateways
 * (`serve --no-worker`) and 2 workers (`worker`) of GiftGenius on one PostgreSQL schema and one Redis
 * database, with one set of services (one commerce: every payment handler's effect is visible there) and one
 * simulated LLM provider. A webhook storm spread over the gateways (duplicates sent to other gateways than
 * the first copy), deep-analysis jobs, and AI requests of one user over every gateway against the app's
 * 30-per-minute rule; midway one gateway and one worker are SIGKILLed and restarted. Afterwards every 2xx
 * webhook was processed exactly once, every job is terminal with exactly one terminal event, at most 30 AI
 * requests were allowed, and the audit chain verifies.
 *
 * Knobs (environment): BREAKWATER_PROOF_JOBS (default 5 000: the proof's size; each deep analysis is about
 * ten round trips, and the app runs four at a time per worker, so the two workers' eight slots set the pace),
 * BREAKWATER_PROOF_EVENTS (distinct webhook events, default 1 000; half as many duplicates again),
 * BREAKWATER_PROOF_REDIS_DB (the Redis database index, default 13; the test deletes its `breakwater:` keys
 * there afterwards).
 */
function knob(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be an integer >= 0`);
  return value;
}

const JOBS = knob('BREAKWATER_PROOF_JOBS', 5_000);
const EVENTS = knob('BREAKWATER_PROOF_EVENTS', 1_000);
const REDIS_DB = knob('BREAKWATER_PROOF_REDIS_DB', 13);
const DUPLICATES = Math.round(EVENTS / 2);
const ORDERS = 60;
/** 30 per gateway: all 90 would pass if each instance counted on its own. */
const AI_REQUESTS = 90;
const AI_LIMIT = 30;
/** Kill once this share of the distinct events got a 2xx. */
const KILL_AT = 0.4;
/** Generous: CI runs other test files beside this one on the same two CPUs. */
const BUDGET_MS = 240_000;

// Both print why they skip when their server is not given.
const withRedis = describeRedis('distributed proof');
const withPostgres = describePostgres('distributed proof');
const describeProof = TEST_REDIS_URL === '' ? withRedis : withPostgres;

describeProof('distributed proof (3 gateways, 2 workers, PostgreSQL + Redis)', () => {
  const schemas = testSchemas('bw_proof');
  const defer = useCleanups();

  it(
    `webhooks, ${JOBS} jobs and AI limits hold across processes, with a gateway and a worker SIGKILLed midway`,
    async () => {
      const began = Date.now();
      const deadline = began + BUDGET_MS - 10_000;
      const log = (line: string) =>
        console.log(`[proof +${((Date.now() - began) / 1000).toFixed(1)} s] ${line}`);
      log(`jobs ${JOBS}, webhook events ${EVENTS} + ${DUPLICATES} duplicates, AI requests ${AI_REQUESTS}`);

      // The shared infrastructure: a fresh schema, a Redis database, the services and the provider.
      const schema = await schemas.create();
      const redisUrl = `${TEST_REDIS_URL.replace(/\/\d*$/, '')}/${REDIS_DB}`;
      const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
      defer(async () => {
        const keys = await redis.keys('breakwater:*');
        if (keys.length > 0) await redis.unlink(...keys);
        await redis.quit();
      });
      const services = await startGiftGeniusServices({});
      defer(() => services.close());
      const sim = await startSimulatedProvider({ port: 0 });
      defer(() => sim.close());
      const orders = await createOrders(services.commerce.url, loadCatalog()[0]!.id, ORDERS);
      const store: Store = await openPostgresStore({ url: TEST_DATABASE_URL, schema });
      defer(() => store.close());

      const settings = {
        databaseUrl: TEST_DATABASE_URL,
        schema,
        redisUrl,
        services: {
          giftUrl: services.gift.url,
          commerceUrl: services.commerce.url,
          analyticsUrl: services.analytics.url,
          llmUrl: sim.url,
        },
        webhookSecret: `whsec_${randomBytes(16).toString('hex')}`,
        auditKey: randomBytes(24).toString('hex'),
      };
      const ports = await freePorts(3);
      const gateways = ports.map((port, i) => gatewayProcess(settings, `gateway-${i}`, port));
      const workers = [0, 1].map((i) => workerProcess(settings, `worker-${i}`));
      const processes: BreakwaterProcess[] = [...gateways, ...workers];
      defer(() => Promise.all(processes.map((p) => p.kill())));
      await Promise.all(processes.map((p) => p.start()));
      log('3 gateways and 2 workers running');
      const urls = ports.map((port) => `http://127.0.0.1:${port}`);

      // The load, all at once: jobs enqueued by a producer of their own, the storm, the AI requests.
      const jobIds: string[] = [];
      const enqueue = async () => {
        while (jobIds.length < JOBS) {
          const i = jobIds.length;
          jobIds.push('');
          const { job } = await store.enqueue({
            type: DEEP_ANALYSIS_JOB,
            payload: { interests: ['books', 'coffee'], budget_usd: 60, recipient: `r${i}` },
            runAt: Date.now(),
            priority: 0,
            maxAttempts: 3,
          });
          jobIds[i] = job.id;
        }
      };
      let crash: Promise<void> | undefined;
      const killAndRestart = async () => {
        const [gateway, worker] = [gateways[1]!, workers[0]!];
        log(`SIGKILL ${gateway.name} (pid ${gateway.pid}) and ${worker.name} (pid ${worker.pid})`);
        await Promise.all([gateway.kill(), worker.kill()]);
        await Promise.all([gateway.restart(), worker.restart()]);
        log(`${gateway.name} and ${worker.name} restarted`);
      };
      const plan = planDeliveries(EVENTS, { duplicates: DUPLICATES, gateways: 3, orders, seed: 9 });
      const killAfter = Math.max(1, Math.floor(EVENTS * KILL_AT));
      const user = `proof-${randomBytes(4).toString('hex')}`;
      const [, storm, ai] = await Promise.all([
        Promise.all(Array.from({ length: 16 }, enqueue)).then(() => log(`${JOBS} jobs enqueued`)),
        sendWebhooks(urls, plan, {
          secret: settings.webhookSecret,
          lanes: 48,
          onAck: (_id, acked) => {
            if (acked >= killAfter && crash === undefined) {
              crash = killAndRestart();
              crash.catch(() => undefined); // awaited (and its error thrown) after the load
            }
          },
        }).then((report) => {
          const lostAnswers = report.acknowledged.size - report.firstAccepts.size;
          log(
            `storm done: retried ${JSON.stringify(report.retried)}, ${lostAnswers} events stored with no first answer`,
          );
          return report;
        }),
        sendAiRequests(urls, { total: AI_REQUESTS, spacingMs: 150, user }),
      ]);
      await crash;

      // Everything settles: no job pending or running.
      const expectedJobs = JOBS + storm.acknowledged.size;
      for (let round = 0; ; round++) {
        const { counts } = await store.stats();
        if (round % 10 === 0) log(`jobs: ${JSON.stringify(counts)}`);
        const total = Object.values(counts).reduce((a, b) => a + b, 0);
        if (counts.pending === 0 && counts.in_progress === 0 && total >= expectedJobs) break;
        if (Date.now() > deadline) throw new Error(`jobs not settled in time: ${JSON.stringify(counts)}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      log('every job settled');
      for (const p of processes) expect(p.alive, `${p.name}: ${p.stderr()}`).toBe(true);

      // Webhooks: every event got a final 2xx; none was accepted as new twice (whichever gateways the
      // copies reached); one inbox row each, its job completed; one payment intent each at commerce.
      expect(Object.keys(storm.finalByStatus)).toEqual(['200']);
      expect(storm.acknowledged.size).toBe(EVENTS);
      expect([...storm.firstAccepts.values()].filter((n) => n > 1)).toEqual([]);
      const books = await readStoreBooks(TEST_DATABASE_URL, schema);
      expect(books.inbox.size).toBe(EVENTS);
      expect([...storm.acknowledged].filter((id) => books.inbox.get(id) !== 1)).toEqual([]);
      expect(books.inboxNotCompleted).toBe(0);
      const intents = await paymentIntentsByKey(services.commerce.url);
      expect([...storm.acknowledged].filter((id) => intents.get(id) !== 1)).toEqual([]);
      expect(intents.size).toBe(EVENTS);

      // Jobs: all completed, each with exactly one terminal event; some were reclaimed from the dead worker.
      expect(books.types).toEqual({ [DEEP_ANALYSIS_JOB]: JOBS, 'webhook.payments': EVENTS });
      expect(books.statuses).toEqual({ completed: JOBS + EVENTS });
      expect(books.badTerminals).toEqual([]);
      expect(new Set(jobIds).size).toBe(JOBS);
      log(`jobs started more than once (reclaimed after the SIGKILL): ${books.restarted}`);
      expect(books.restarted).toBeGreaterThan(0);

      // AI: at most 30 admitted in the minute by all gateways together (the provider saw at most 30).
      const finals = ai.map((o) => o.tries.at(-1));
      const allowed = finals.filter((s) => s === 200).length;
      const failedTries = ai.flatMap((o) => o.tries).filter((s) => s === 'error').length;
      const sentSpanMs = Math.max(...ai.map((o) => o.sentAt)) - Math.min(...ai.map((o) => o.sentAt));
      log(
        `AI: ${allowed} allowed, ${finals.filter((s) => s === 429).length} limited, ${failedTries} failed connections, provider saw ${sim.requests.length}, sent over ${sentSpanMs} ms`,
      );
      expect(sentSpanMs).toBeLessThan(60_000);
      expect(ai.flatMap((o) => o.tries).filter((s) => s !== 200 && s !== 429 && s !== 'error')).toEqual([]);
      expect(allowed).toBeLessThanOrEqual(AI_LIMIT);
      expect(sim.requests.length).toBeLessThanOrEqual(AI_LIMIT);
      expect(allowed + failedTries).toBeGreaterThanOrEqual(AI_LIMIT);

      // The audit chain, appended by five processes (two of them killed once), verifies end to end, read
      // here and by `breakwater audit verify` (same schema and key through the environment).
      await Promise.all(processes.map((p) => p.stop()));
      const audit = await verifyAudit(store.audit, { hmacKey: settings.auditKey });
      log(`audit: ${JSON.stringify(audit)}`);
      if (!audit.ok) throw new Error(`the audit chain breaks at ${audit.brokenSeq}: ${audit.reason}`);
      expect(audit.records).toBeGreaterThan(0);
      // Lines are appended after the state's commit, batched per process: a SIGKILL loses the unflushed ones.
      log(`audit lines by action: ${JSON.stringify(await auditActions(store.audit))}`);
      const cli = await runCli(settings, ['audit', 'verify', '--db', TEST_DATABASE_URL]);
      expect(cli).toEqual({
        code: 0,
        stdout: `audit chain verified: ${audit.records} records, head ${audit.headSeq} ${audit.headHash}\n`,
      });
      log('done');
    },
    BUDGET_MS,
  );
});

/**
 * The worker process of crash.test.ts: `node --import tsx test/jobs/crash-worker.ts '<WorkerConfig JSON>'`.
 * It writes one JSON {@link WorkerMessage} per line on stdout (a pipe: synchronous on Linux, so a line
 * the test read was written before the next step began) and never ends by itself: the test SIGKILLs it.
 *
 * - `run`: enqueues one crash job and starts a worker; the handler performs the side effect, prints
 *   `mid-job` with the lease token it holds, then blocks until its signal aborts (it never does here).
 * - `enqueue`: enqueues jobs one after another, printing `enqueued` as soon as each enqueue resolved.
 *
 * A safety timer ends the process after 30 s, should the test die without killing it.
 */
import { createJobs } from '../../src/jobs/index.js';
import {
  CRASH_JOB,
  openSideEffects,
  openStore,
  performSideEffect,
  type WorkerConfig,
  type WorkerMessage,
} from './crash-support.js';

setTimeout(() => process.exit(3), 30_000).unref();

function send(message: WorkerMessage): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

/** Resolves never; rejects with the signal's reason once it aborts. */
function blockUntilAborted(signal: AbortSignal): Promise<never> {
  return new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

const config = JSON.parse(process.argv[2] ?? '') as WorkerConfig;
const store = await openStore(config.backend);

if (config.mode === 'run') {
  const effects = await openSideEffects(config.backend);
  const jobs = createJobs({ store, owner: config.owner, leaseMs: config.leaseMs });
  jobs.defineJob(CRASH_JOB, async ({ jobId, attempt, signal }) => {
    await performSideEffect(effects, jobId, attempt);
    const job = await store.get(jobId);
    send({
      event: 'mid-job',
      jobId,
      attempt,
      token: job?.leaseToken ?? -1,
      owner: job?.leaseOwner ?? null,
      pid: process.pid,
    });
    return blockUntilAborted(signal);
  });
  await jobs.enqueue(CRASH_JOB, { order: 'A-1', amountCents: 4_200 }, { maxAttempts: 3 });
  jobs.start();
} else {
  const jobs = createJobs({ store });
  jobs.defineJob(CRASH_JOB, () => undefined);
  for (let i = 0; i < config.max; i++) {
    const jobId = await jobs.enqueue(CRASH_JOB, { i });
    send({ event: 'enqueued', jobId, i });
  }
}

// Stay up (a blocked handler or an idle store keeps nothing alive by itself) until the test kills us.
setInterval(() => undefined, 1_000);

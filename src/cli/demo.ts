/**
 * `breakwater demo`: a policy pipeline in front of a flaky in-process "gift service", run through four
 * phases (healthy, outage, recovery, hang) and a burst, printing what each policy decided and the error a
 * model would receive. Real time, about four seconds; no network.
 */
import {
  ConsecutiveWindow,
  bulkhead,
  circuitBreaker,
  constantBackoff,
  faultInjection,
  pipeline,
  retry,
  timeout,
} from '../policy/index.js';
import { Deadline, isBreakwaterError, toProblem } from '../core/index.js';
import { CliError, EXIT } from './context.js';

const OPEN_MS = 1500;

const DEMO_USAGE = `Usage: breakwater demo

Runs a resilience pipeline (bulkhead, retry, circuit breaker, timeout) against a flaky in-process gift
service through four phases and a burst, printing what each policy decided. Takes about four seconds.`;

export async function runDemo(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(DEMO_USAGE);
    return 0;
  }
  if (argv.length > 0)
    throw new CliError(`demo takes no arguments, got '${argv[0]}'\n\n${DEMO_USAGE}`, EXIT.usage);
  const service = faultInjection({ name: 'gift-service', latency: { rate: 1, ms: 20 } });
  const guard = bulkhead({ name: 'gift-service', maxConcurrent: 3, maxQueue: 2, queueTimeoutMs: 500 });
  const retries = retry({ name: 'gift-service', maxAttempts: 3, backoff: constantBackoff(50) });
  const breaker = circuitBreaker({
    name: 'gift-service',
    window: new ConsecutiveWindow(5),
    openDurationMs: OPEN_MS,
  });
  const limit = timeout({ name: 'gift-service', timeoutMs: 300 });
  const giftService = pipeline(guard, retries, breaker, limit, service);

  retries.onRetry((e) =>
    log(`  retry: attempt ${e.attempt} failed, attempt ${e.nextAttempt} in ${e.delayMs} ms`),
  );
  breaker.onStateChange((e) => log(`  breaker: ${e.from} → ${e.to} (${e.reason})`));
  limit.onTimeout((e) => log(`  timeout: no answer within ${e.afterMs} ms`));
  guard.onRejected((e) => log(`  bulkhead: rejected (${e.reason})`));

  const call = async (label: string): Promise<void> => {
    const started = performance.now();
    try {
      const ideas = await Deadline.run(10_000, () => giftService.execute(() => ['scarf', 'tea set']));
      log(`${label}: ok ${JSON.stringify(ideas)} in ${elapsed(started)}`);
    } catch (error) {
      const p = toProblem(error);
      const code = isBreakwaterError(error) ? error.code : p.code;
      log(`${label}: ${code} in ${elapsed(started)} (retry_after_ms ${p.retry_after_ms}) "${p.detail}"`);
    }
  };

  log('Phase 1: the gift service is healthy');
  for (let i = 1; i <= 2; i++) await call(`call ${i}`);

  log('\nPhase 2: the gift service fails every call: retries, then the breaker opens and answers at once');
  service.configure({ error: { rate: 1, code: 'upstream_unavailable' } });
  for (let i = 3; i <= 6; i++) await call(`call ${i}`);

  log(`\nPhase 3: the service recovers; after ${OPEN_MS} ms one trial call closes the breaker`);
  service.configure({ latency: { rate: 1, ms: 20 } });
  await new Promise((resolve) => setTimeout(resolve, OPEN_MS + 50));
  await call('call 7');

  log('\nPhase 4: the service hangs; each attempt is cut at 300 ms and the signal aborts the work');
  service.configure({ hang: { rate: 1 } });
  await call('call 8');
  breaker.reset();

  log('\nPhase 5: a burst of 7 concurrent calls against a bulkhead of 3 slots and a queue of 2');
  service.configure({ latency: { rate: 1, ms: 100 } });
  await Promise.all(Array.from({ length: 7 }, (_, i) => call(`burst ${i + 1}`)));

  log(`\nFinal state: ${JSON.stringify({ breaker: breaker.state().state, bulkhead: guard.state() })}`);
  return 0;
}

function elapsed(started: number): string {
  return `${Math.round(performance.now() - started)} ms`;
}

function log(line: string): void {
  console.log(line);
}

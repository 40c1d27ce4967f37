/**
 * `npm run bench -- policies`: calls per second through the four-policy pipeline (bulkhead → retry →
 * circuit breaker → timeout) around a function that resolves at once, against cockatiel's `wrap()` of the
 * same four policies and opossum's `fire()` (breaker + timeout + capacity; it has no retry), plus the
 * open-breaker rejection path. All cases run in one process, interleaved round by round.
 */
import * as cockatiel from 'cockatiel';
import Opossum from 'opossum';
import { lib } from './lib.js';

import { bench, printTable, ratio } from './harness.js';

const { ConsecutiveWindow, bulkhead, circuitBreaker, pipeline, retry, timeout } = lib;

const resolved = (): Promise<number> => Promise.resolve(1);
const noop = (): undefined => undefined;

function ours(isolated: boolean) {
  const breaker = circuitBreaker({ name: 'bench', window: new ConsecutiveWindow(5), openDurationMs: 30_000 });
  if (isolated) breaker.isolate();
  return pipeline(
    bulkhead({ maxConcurrent: 10, maxQueue: 10 }),
    retry({ maxAttempts: 3 }),
    breaker,
    timeout({ timeoutMs: 1000 }),
  );
}

function cockatielPolicy(isolated: boolean) {
  const breaker = cockatiel.circuitBreaker(cockatiel.handleAll, {
    halfOpenAfter: 30_000,
    breaker: new cockatiel.ConsecutiveBreaker(5),
  });
  if (isolated) breaker.isolate();
  return cockatiel.wrap(
    cockatiel.bulkhead(10, 10),
    // cockatiel's maxAttempts counts retries only: 2 retries = 3 calls, the same as ours. Like ours, it does
    // not retry a broken circuit (cockatiel's handleAll would sleep and retry it).
    cockatiel.retry(
      cockatiel.handleWhen((error) => !(error instanceof cockatiel.BrokenCircuitError)),
      { maxAttempts: 2, backoff: new cockatiel.ExponentialBackoff() },
    ),
    breaker,
    cockatiel.timeout(1000, cockatiel.TimeoutStrategy.Aggressive),
  );
}

function opossum(open: boolean) {
  const breaker = new Opossum(resolved, { timeout: 1000, capacity: 10, resetTimeout: 30_000 });
  if (open) breaker.open();
  return breaker;
}

export async function main(): Promise<void> {
  const oursOk = ours(false);
  const oursOpen = ours(true);
  const cockatielOk = cockatielPolicy(false);
  const cockatielOpen = cockatielPolicy(true);
  const opossumOk = opossum(false);
  const opossumOpen = opossum(true);

  const results = await bench([
    { name: 'bare await fn()', run: resolved },
    { name: 'breakwater pipeline', run: () => oursOk.execute(resolved) },
    { name: 'cockatiel wrap()', run: () => cockatielOk.execute(resolved) },
    { name: 'opossum fire()', run: () => opossumOk.fire() },
    { name: 'breakwater breaker open', run: () => oursOpen.execute(resolved).catch(noop) },
    { name: 'cockatiel breaker open', run: () => cockatielOpen.execute(resolved).catch(noop) },
    { name: 'opossum breaker open', run: () => opossumOpen.fire().catch(noop) },
  ]);
  opossumOk.shutdown();
  opossumOpen.shutdown();

  const [bare, bw, ck, op, bwOpen, ckOpen, opOpen] = results as [
    (typeof results)[0],
    (typeof results)[0],
    (typeof results)[0],
    (typeof results)[0],
    (typeof results)[0],
    (typeof results)[0],
    (typeof results)[0],
  ];
  printTable('Policies: timeout + retry + circuit breaker + bulkhead around a resolved function', results);
  console.log('\nRatios (higher is faster for breakwater):');
  console.log(`  success path vs cockatiel:               ${ratio(bw, ck)}  target >= 2x`);
  console.log(`  success path vs opossum:                 ${ratio(bw, op)}  target >= 1.5x`);
  console.log(`  open rejection vs cockatiel success:     ${ratio(bwOpen, ck)}  target >= 5x`);
  console.log(`  open rejection vs cockatiel open:        ${ratio(bwOpen, ckOpen)}`);
  console.log(`  open rejection vs opossum open:          ${ratio(bwOpen, opOpen)}`);
  console.log(`  pipeline overhead over a bare call:      ${(bw.nsPerOp - bare.nsPerOp).toFixed(0)} ns/op`);
}

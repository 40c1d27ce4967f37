/**
 * Every fault told truthfully (docs/giftgenius.md#every-fault--tool-what-the-model-is-told): the GiftGenius
 * gateway driven through the whole fault × tool matrix of `truth-matrix/expectations.ts` with the SDK's
 * client over Streamable HTTP, every cell on a fresh gateway, fresh services and a fresh SQLite file. Faults
 * are set through the services' switches only. Time: real sockets, timeouts and deadlines (shrunk: see
 * MATRIX_SETTINGS), on a FakeClock that follows real time and jumps over the long waits (a breaker's open
 * period, a Retry-After, a job's retry).
 *
 * Per cell: a structured result within the deadline + 100 ms; the exact code, category, outcome and
 * retryability; a sentence of the right kind and no other kind's words; `retry_after_ms` exactly when a wait
 * is known, within the time that passed of the full wait; `unknown` only for a write that may have happened,
 * with an operation id and a lookup, and exactly one order once resumed; otherwise no order of the cell's.
 */
import { describe, expect, it } from 'vitest';
import { loadCatalog, recommendGifts } from '../../examples/giftgenius/services/index.js';
import { until, useCleanups, type ToolAnswer } from './support.js';
import { expectTold } from './truth-matrix/check.js';
import { documentedTable, formattedTable } from './truth-matrix/docs.js';
import {
  CELLS,
  MATRIX_SETTINGS,
  WRITE_TOOLS,
  faultOf,
  type Cell,
  type Success,
} from './truth-matrix/expectations.js';
import {
  ARGS,
  arrange,
  breakerOpen,
  clearFaults,
  finishJob,
  orders,
  startRig,
  type Rig,
} from './truth-matrix/harness.js';

const defer = useCleanups();
const CATALOG = loadCatalog();
const BUDGET_MS = MATRIX_SETTINGS.toolDeadlineMs + 100;

/** Calls `tool` and asserts the answer came within the deadline + 100 ms. */
async function timedCall(rig: Rig, tool: string, args: Record<string, unknown>): Promise<ToolAnswer> {
  const started = performance.now();
  const answer = await rig.mcp.call(tool, args);
  const tookMs = performance.now() - started;
  expect(tookMs, `${tool} answered in ${tookMs.toFixed(0)} ms`).toBeLessThanOrEqual(BUDGET_MS);
  return answer;
}

/** The orders this cell placed (the bulkhead holders use other customers). */
async function cellOrders(rig: Rig): Promise<Array<Record<string, unknown>>> {
  return (await orders(rig)).filter((o) => o['customer_id'] === 'cus_matrix');
}

/** A successful sync answer is exactly what the services hold. */
async function expectSuccess(rig: Rig, cell: Cell, answer: ToolAnswer, told: Success): Promise<void> {
  expect(answer.isError, answer.content[0]?.text).toBeUndefined();
  const value = answer.structuredContent;
  if (cell.tool === 'suggest_gifts') {
    expect(value).toEqual({ gifts: recommendGifts(CATALOG, ARGS.suggest_gifts as never) });
    return;
  }
  const order = cell.tool === 'checkout' ? value : value.order;
  if (cell.tool === 'suggest_and_checkout') {
    const [best] = recommendGifts(CATALOG, { interests: ['tea'], budget_usd: 30, limit: 1 });
    expect(value.gift).toEqual(best);
  }
  expect(order).toMatchObject({
    status: 'confirmed',
    customer_id: 'cus_matrix',
    reconciled: told.reconciled ?? false,
  });
  expect((await cellOrders(rig)).map((o) => [o['order_id'], o['idempotency_key']])).toEqual([
    [order.order_id, order.operation_id],
  ]);
}

/** After `unknown`: the faults cleared and the breaker past, resuming the operation places exactly one order. */
async function resume(rig: Rig, cell: Cell, operationId: string): Promise<void> {
  const { commerce } = rig.services;
  // Abandoned requests end first, so none is handled late after the fault is cleared.
  await until(() => commerce.faults.hanging() === 0, 'the hanging commerce requests to end');
  commerce.faults.clear();
  if (await breakerOpen(rig, 'commerce')) await rig.time.jump(MATRIX_SETTINGS.commerceOpenMs);
  const resumed = await timedCall(rig, cell.tool, { ...ARGS[cell.tool], operation_id: operationId });
  expect(resumed.isError, resumed.content[0]?.text).toBeUndefined();
  const order = cell.tool === 'checkout' ? resumed.structuredContent : resumed.structuredContent.order;
  expect(order.operation_id).toBe(operationId);
  expect((await cellOrders(rig)).map((o) => [o['order_id'], o['idempotency_key']])).toEqual([
    [order.order_id, operationId],
  ]);
}

/** What a cell's runner needs besides the cell: when it started, and the steps around the call. */
interface Steps {
  since: number;
  /** Ends what the arrangement holds (see `Arranged.release`). */
  release(): Promise<void>;
  /** Asserts the requests the faulted service received for the call (a resume's excluded). */
  counted(): void;
}

async function syncCell(rig: Rig, cell: Cell, steps: Steps): Promise<void> {
  const answer = await timedCall(rig, cell.tool, ARGS[cell.tool]);
  const elapsed = rig.time.clock.now() - steps.since;
  await steps.release();
  const told = cell.told;
  if (told.ok) {
    await expectSuccess(rig, cell, answer, told);
    return steps.counted();
  }
  expect(answer.isError).toBe(true);
  const error = answer.structuredContent.error;
  expect(answer.content).toEqual([{ type: 'text', text: error.message }]);
  expectTold(error, told, elapsed);
  steps.counted();
  if (told.outcome === 'unknown') return resume(rig, cell, error.operation_id);
  if (WRITE_TOOLS.has(cell.tool)) {
    // Cleared first: a status fault answers the shop's order list too.
    clearFaults(rig);
    expect(await cellOrders(rig)).toEqual([]);
  }
}

async function jobCell(rig: Rig, cell: Cell, steps: Steps): Promise<void> {
  const started = await timedCall(rig, cell.tool, ARGS[cell.tool]);
  expect(started.isError, started.content[0]?.text).toBeUndefined();
  const jobId: string = started.structuredContent.job_id;
  if ((cell.jobAttempts ?? 1) > 1) {
    // What holds the dependency stays until the first run failed against it.
    await until(async () => {
      const job = await rig.gw.store.get(jobId);
      return job !== undefined && job.attempts >= 1 && job.status !== 'in_progress';
    }, 'the first run to end');
  }
  await steps.release();
  const { lastRunFrom } = await finishJob(rig, jobId);
  const status = (await timedCall(rig, 'get_job_status', { job_id: jobId })).structuredContent;
  const elapsed = rig.time.clock.now() - lastRunFrom;
  if (cell.told.ok) {
    expect(status.status).toBe('completed');
    expect(status.result.gifts).toEqual(recommendGifts(CATALOG, ARGS.start_deep_analysis as never));
  } else {
    expect(status.status).toBe('failed');
    expectTold(status.error, cell.told, elapsed);
  }
  expect(status.attempts).toBe(cell.jobAttempts);
  steps.counted();
}

describe('the truth matrix of GiftGenius', () => {
  it('answers unknown only for writes, and names every fault × tool once', () => {
    for (const cell of CELLS) {
      if (!cell.told.ok && cell.told.outcome === 'unknown') expect(WRITE_TOOLS.has(cell.tool)).toBe(true);
    }
    const keys = CELLS.map((c) => `${c.fault} ${c.tool}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBe(80);
  });

  it('docs/giftgenius.md shows exactly this matrix', async () => {
    expect(documentedTable()).toBe(await formattedTable());
  });

  for (const cell of CELLS) {
    it(`${faultOf(cell.fault).label} × ${cell.tool}`, async () => {
      const rig = await startRig(defer);
      const since = rig.time.clock.now();
      const arranged = await arrange(rig, cell.fault);
      const service = faultOf(cell.fault).service;
      const proxy = service === 'gift' || service === 'commerce' ? rig.proxies[service] : undefined;
      const before = proxy?.requests() ?? 0;
      const steps: Steps = {
        since,
        release: () => arranged.release(),
        counted() {
          if (cell.requests !== undefined) expect(proxy!.requests() - before, 'requests').toBe(cell.requests);
        },
      };
      await (cell.tool === 'start_deep_analysis' ? jobCell(rig, cell, steps) : syncCell(rig, cell, steps));
    });
  }
});

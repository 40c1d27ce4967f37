/**
 * A checkout whose outcome the ledger could not confirm, settled with the customer's say (docs/jobs.md,
 * "Asking for input"): the job `checkout.confirm` looks the order up; when it still cannot tell, it asks "place
 * it again?" through `ctx.requestInput` and waits (the job is `input_required`, answered with
 * `respond_to_job` with `{ action, content }`, as MCP elicitation answers). Accepted with `place_again: true`: it looks the order up once more and places it again under a NEW operation (a new
 * Idempotency-Key) only if that lookup confirms the first order never happened; declined, canceled or `place_again: false`: it places nothing and ends.
 *
 * Every step before the question runs again when the answer comes (durable replay): the lookup is a read,
 * and the new order is placed with a ledger key derived from the first operation, so a rerun resumes it
 * instead of ordering twice.
 */
import { BreakwaterError } from '../../src/entries/index.js';
import type { Jobs, Store } from '../../src/entries/jobs.js';
import { jobTool, type JobTool } from '../../src/entries/mcp.js';
import type { OperationAction, OperationLedger } from '../../src/entries/operations.js';
import { z } from 'zod';
import { CREATE_ORDER, type Order, type OrderRequest } from './checkout.js';

export const CONFIRM_CHECKOUT_JOB = 'checkout.confirm';

/** The question, its answer's schema (MCP elicitation's flat shape) and its key. */
export const PLACE_AGAIN = {
  key: 'place-again',
  message: "I can't confirm whether the checkout went through; place it again?",
  schema: {
    type: 'object' as const,
    properties: { place_again: { type: 'boolean', description: 'Place the order again' } },
    required: ['place_again'],
  },
};

/** How the confirmation ended. */
export type ConfirmOutcome =
  | { status: 'placed'; operation_id: string; order: Order }
  | { status: 'placed_again'; operation_id: string; previous_operation_id: string; order: Order }
  | { status: 'not_placed'; operation_id: string; reason: 'declined' | 'still_unknown' | 'new_order_failed' };

export function defineCheckoutConfirm(
  jobs: Jobs,
  store: Store,
  operations: OperationLedger,
  createOrder: OperationAction<OrderRequest, Order>,
): void {
  jobs.defineJob<{ operation_id: string }>(
    CONFIRM_CHECKOUT_JOB,
    async (ctx): Promise<ConfirmOutcome> => {
      const id = ctx.payload.operation_id;
      const record = await store.operations.get(id);
      const owner = (await jobs.get(ctx.jobId))?.owner ?? null;
      // Only the customer's own checkout: anyone else's reads as one that does not exist.
      if (record === undefined || record.action !== CREATE_ORDER || record.owner !== owner) {
        throw new BreakwaterError('not_found', { message: `No checkout has the operation id ${id}.` });
      }
      const first = await operations.reconcile(id, 'job:checkout.confirm');
      if (first.outcome === 'succeeded')
        return { status: 'placed', operation_id: id, order: first.result as Order };

      const answer = await ctx.requestInput(PLACE_AGAIN);
      if (answer.action !== 'accept' || answer.content?.['place_again'] !== true)
        return { status: 'not_placed', operation_id: id, reason: 'declined' };

      const again = await operations.reconcile(id, 'job:checkout.confirm');
      if (again.outcome === 'succeeded')
        return { status: 'placed', operation_id: id, order: again.result as Order };
      // Only a lookup that confirmed nothing was placed settles it failed; unknown means it may exist.
      if (again.outcome !== 'failed')
        return { status: 'not_placed', operation_id: id, reason: 'still_unknown' };
      const placed = await operations.execute(createOrder, record.request as OrderRequest, {
        key: `${id}:again`,
        owner,
        actor: 'job:checkout.confirm',
        signal: ctx.signal,
      });
      if (placed.outcome !== 'succeeded') {
        return { status: 'not_placed', operation_id: placed.operation_id, reason: 'new_order_failed' };
      }
      return {
        status: 'placed_again',
        operation_id: placed.operation_id,
        previous_operation_id: id,
        order: placed.result as Order,
      };
    },
    { maxAttempts: 3 },
  );
}

/** The tool that starts the confirmation, for a checkout whose outcome stayed unknown. */
export function confirmCheckoutTool(): JobTool {
  return jobTool({
    name: 'confirm_checkout',
    title: 'Confirm an uncertain checkout',
    description:
      'Settles a checkout whose outcome stayed unknown (checkout answered outcome "unknown" and resuming it did not help). Starts a background job that looks the order up and, when it still can\'t tell, asks the user whether to place it again (get_job_status shows the question; answer with respond_to_job).',
    inputSchema: { operation_id: z.string().min(1).max(200).describe('The operation_id of the checkout') },
    // No idempotency key: job keys are global, so one naming the operation would let another principal's
    // call take it. Two confirmations of one checkout are safe: the new order's ledger key is the same.
    jobType: CONFIRM_CHECKOUT_JOB,
  });
}

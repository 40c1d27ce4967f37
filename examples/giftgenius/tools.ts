/**
 * The GiftGenius tools: `suggest_gifts` (sync), `start_deep_analysis` (a job), `checkout` and
 * `suggest_and_checkout` (the chain gift → commerce, each behind its own bulkhead and breaker). `get_job_status`
 * and `cancel_job` come with the job tool. Failures reach the model as structured tool results (see
 * docs/mcp.md); the handlers only say what to call.
 */
import { z } from 'zod';
import { BreakwaterError } from '../../src/entries/index.js';
import {
  jobTool,
  resilientTool,
  TOOL_DEADLINE_DEFAULT_MS,
  type McpTool,
  type ToolContext,
} from '../../src/entries/mcp.js';
import { operationError, type OperationAction, type OperationLedger } from '../../src/entries/operations.js';
import { DEEP_ANALYSIS_JOB } from './analysis.js';
import { analysisWidget } from './widget/index.js';
import { createOrderAction, type Order, type OrderRequest } from './checkout.js';
import { CHECKOUT_UNKNOWN, type GiftGeniusUpstreams } from './upstreams.js';

/** A gift as the gift service ranks it. */
export interface Gift {
  id: string;
  name: string;
  price_usd: number;
  score: number;
  reason: string;
}

export type { Order } from './checkout.js';

const suggestInput = {
  interests: z
    .array(z.string().min(1))
    .min(1)
    .max(10)
    .describe('What the recipient likes, e.g. ["coffee", "travel"]'),
  budget_usd: z.number().positive().max(10_000).describe('Most the gift may cost, in USD'),
  recipient: z.string().max(100).optional().describe('Who the gift is for, e.g. "Sam"'),
  limit: z.number().int().min(1).max(20).optional().describe('How many gifts (default 5)'),
};

const checkoutInput = {
  product_id: z.string().min(1).max(100).describe('The product to buy, e.g. "p042"'),
  quantity: z.number().int().min(1).max(10).default(1),
  customer_id: z.string().min(1).max(100).describe("The buyer's customer id"),
  operation_id: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .describe('Resume an earlier checkout whose outcome was unknown: pass its operation_id, never a new one'),
};

/** Options of {@link giftGeniusTools}. */
export interface GiftGeniusToolOptions {
  /**
   * Each tool call's budget in ms (integer 1..30 000, default 10 000; `suggest_gifts`'s description states
   * it). Tests shrink it together with the upstream timeouts.
   */
  deadlineMs?: number;
  /**
   * The `commerce.create_order` action (default: `createOrderAction(commerce)`): give the one the app's HTTP
   * route uses too, as the ledger holds one action object per name.
   */
  createOrder?: OperationAction<OrderRequest, Order>;
}

/** @throws RangeError naming `deadlineMs` when it is not an integer in 1..30 000. */
export function giftGeniusTools(
  upstreams: GiftGeniusUpstreams,
  operations: OperationLedger,
  options: GiftGeniusToolOptions = {},
): McpTool[] {
  const { gift, commerce, analytics } = upstreams;
  const deadlineMs = options.deadlineMs ?? TOOL_DEADLINE_DEFAULT_MS;
  const seconds = deadlineMs / 1_000;
  const within = `Answers within ${seconds} second${seconds === 1 ? '' : 's'}.`;
  const createOrder = options.createOrder ?? createOrderAction(commerce);
  // Registered now, so this process recovers checkouts left unsettled (also by an earlier run).
  operations.define(createOrder);

  async function suggest(
    args: { interests: string[]; budget_usd: number; recipient?: string; limit?: number },
    signal: AbortSignal,
    correlationId: string,
  ): Promise<Gift[]> {
    const response = await gift.post<{ gifts: Gift[] }>('/recommendations', args, {
      // A search: safe to send twice.
      idempotent: true,
      signal,
      correlationId,
    });
    // Analytics may lag or fail; it never holds up or fails the answer (its own bulkhead bounds the backlog).
    void analytics
      .post(
        '/events',
        { name: 'gifts_suggested', properties: { count: response.body.gifts.length } },
        { correlationId },
      )
      .catch(() => undefined);
    return response.body.gifts;
  }

  /**
   * Places an order through the operation ledger (docs/operations.md): the operation is persisted before
   * the first call and its id is the order's Idempotency-Key, so a retry, a resume or a restart never creates
   * a second order; after a silent attempt the order is looked up by that id instead of being resent blindly.
   * A result other than `succeeded` becomes the tool's error, with `outcome`, `operation_id` and `reconcile`.
   */
  async function placeOrder(
    args: { product_id: string; quantity: number; customer_id: string; operation_id?: string },
    ctx: ToolContext,
  ): Promise<Order & { operation_id: string; reconciled: boolean }> {
    const request = { product_id: args.product_id, quantity: args.quantity, customer_id: args.customer_id };
    const result = await operations.execute(createOrder, request, {
      operationId: args.operation_id,
      signal: ctx.signal,
      actor: 'mcp:checkout',
      // Cut off by the tool's deadline, the answer still names the operation to resume.
      onOperation: (id, reconcile) => ctx.operation(id, reconcile),
    });
    if (result.outcome !== 'succeeded') throw operationError(result, { unknown: CHECKOUT_UNKNOWN });
    const reconciled = result.transport_observation === 'lookup_succeeded';
    return { ...result.result!, operation_id: result.operation_id, reconciled };
  }

  return [
    resilientTool({
      name: 'suggest_gifts',
      deadlineMs,
      title: 'Suggest gifts',
      description: `Suggests gifts within a budget for someone with the given interests, best match first. ${within}`,
      inputSchema: suggestInput,
      annotations: { readOnlyHint: true },
      handler: async (args, ctx) => ({ gifts: await suggest(args, ctx.signal, ctx.correlationId) }),
    }),
    jobTool({
      name: 'start_deep_analysis',
      deadlineMs,
      title: 'Start a deep gift analysis',
      description:
        'Starts a longer analysis (four steps, about a few seconds) as a background job and answers with its job_id. Follow it with get_job_status; draft gifts appear as partial results before the final list. A client that asks for progress gets the steps as they run, and the final list itself when the analysis ends within the call.',
      inputSchema: suggestInput,
      jobType: DEEP_ANALYSIS_JOB,
      ui: analysisWidget,
    }),
    resilientTool({
      name: 'checkout',
      deadlineMs,
      title: 'Buy a gift',
      description:
        'Orders a product for a customer. Returns the order, or an error whose outcome says whether the order may exist: after outcome "unknown", call checkout again with the same operation_id to resume safely.',
      inputSchema: checkoutInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
      handler: (args, ctx) => placeOrder(args, ctx),
    }),
    resilientTool({
      name: 'suggest_and_checkout',
      deadlineMs,
      title: 'Pick the best gift and buy it',
      description:
        'Suggests gifts for the interests and budget, then orders the best one for the customer. Each step has its own limits, so a slow gift service does not block checkouts in progress.',
      inputSchema: {
        interests: suggestInput.interests,
        budget_usd: suggestInput.budget_usd,
        customer_id: checkoutInput.customer_id,
        operation_id: checkoutInput.operation_id,
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
      handler: async (args, ctx) => {
        const gifts = await suggest(
          { interests: args.interests, budget_usd: args.budget_usd, limit: 1 },
          ctx.signal,
          ctx.correlationId,
        );
        const best = gifts[0];
        if (best === undefined) {
          throw new BreakwaterError('not_found', {
            message: `No gift matches ${args.interests.join(', ')} within $${args.budget_usd}.`,
          });
        }
        const order = await placeOrder(
          {
            product_id: best.id,
            quantity: 1,
            customer_id: args.customer_id,
            operation_id: args.operation_id,
          },
          ctx,
        );
        return { gift: best, order };
      },
    }),
  ];
}

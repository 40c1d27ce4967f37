/**
 * GiftGenius's one side-effecting action, `commerce.create_order`, for the operation ledger (docs/operations.md):
 * the operation id is the order's `Idempotency-Key` and correlation id; a silent attempt is settled by
 * looking the order up by that key (`GET /orders?idempotency_key=…`), never by sending blindly. Commerce
 * deduplicates on the key, so a resend after a lookup found nothing is safe (`retryAllowed: true`).
 */
import { BreakwaterError, isBreakwaterError } from '../../src/entries/index.js';
import { type LookupResult, type OperationAction } from '../../src/entries/operations.js';
import { type Upstream } from '../../src/entries/upstream.js';

/** What the checkout sends to commerce. */
export interface OrderRequest {
  product_id: string;
  quantity: number;
  customer_id: string;
}

/** An order as the commerce service answers it. */
export interface Order {
  order_id: string;
  status: string;
  amount_usd: number;
  product_id: string;
  quantity: number;
}

/** The action's name in the ledger (and in `breakwater ops list`). */
export const CREATE_ORDER = 'commerce.create_order';

export function createOrderAction(commerce: Upstream): OperationAction<OrderRequest, Order> {
  return {
    name: CREATE_ORDER,
    target: 'POST commerce /orders',
    retryAllowed: true,
    // Settle within 10 minutes or escalate; one attempt's worst case is commerce's 3 s timeout plus its queue.
    recoveryMs: 10 * 60_000,
    attemptTimeoutMs: 30_000,
    reconcile: (operationId) => ({
      method: 'GET',
      path: `/orders?idempotency_key=${encodeURIComponent(operationId)}`,
    }),
    async send({ operationId, correlationId, request, signal }) {
      try {
        // retry: false: the ledger decides resends, and only after a lookup.
        const response = await commerce.post<Order>('/orders', request, {
          idempotencyKey: operationId,
          correlationId,
          signal,
          retry: false,
        });
        return response.body;
      } catch (error) {
        throw isInProgress(error) ? stillRunning(error) : error;
      }
    },
    async lookup({ operationId, correlationId, signal }): Promise<LookupResult<Order>> {
      try {
        const response = await commerce.get<Order>('/orders', {
          query: { idempotency_key: operationId },
          correlationId,
          signal,
        });
        return { state: 'succeeded', result: response.body };
      } catch (error) {
        if (isBreakwaterError(error) && error.details?.['upstream_status'] === 404)
          return { state: 'not_found' };
        throw error;
      }
    },
  };
}

/**
 * Commerce's 409 `idempotency_in_progress`: an earlier request under this key is still running there and may
 * yet place the order. That is an unknown outcome, not a refusal.
 */
function isInProgress(error: unknown): error is BreakwaterError {
  if (!isBreakwaterError(error)) return false;
  const body = error.details?.['upstream_body'] as { code?: unknown } | undefined;
  return error.details?.['upstream_status'] === 409 && body?.code === 'idempotency_in_progress';
}

function stillRunning(error: BreakwaterError): BreakwaterError {
  return new BreakwaterError('outcome_unknown', {
    kind: 'transient',
    outcome: 'unknown',
    source: error.source,
    details: { ...error.details, reason: 'idempotency_in_progress' },
    cause: error,
  });
}

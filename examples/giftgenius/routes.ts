/**
 * GiftGenius's own HTTP route, mounted by the gateway under `/giftgenius` (docs/giftgenius.md, "Checkout over
 * HTTP"): `POST /giftgenius/orders`, the `checkout` tool for a shop's backend rather than a model. It needs an
 * `Idempotency-Key` (a client's retry replays the first answer instead of ordering again) and runs the same
 * `commerce.create_order` action through the operation ledger as the tool (the order's own key towards
 * commerce is the operation id).
 */
import type { AppRoutes } from '../../src/entries/gateway.js';
import { operationError, type OperationAction, type OperationLedger } from '../../src/entries/operations.js';
import { requestSignal } from '../../src/entries/server.js';
import type { Order, OrderRequest } from './checkout.js';
import { CHECKOUT_UNKNOWN } from './upstreams.js';

/** The body of `POST /giftgenius/orders`. */
export interface OrderBody extends OrderRequest {
  /** Resume an earlier order whose outcome was unknown (send it under a new Idempotency-Key). */
  operation_id?: string;
}

const ORDER_BODY = {
  type: 'object',
  required: ['product_id', 'customer_id'],
  additionalProperties: false,
  properties: {
    product_id: { type: 'string', minLength: 1, maxLength: 100 },
    quantity: { type: 'integer', minimum: 1, maximum: 10, default: 1 },
    customer_id: { type: 'string', minLength: 1, maxLength: 100 },
    operation_id: { type: 'string', minLength: 1, maxLength: 255 },
  },
} as const;

/**
 * The routes: `POST /giftgenius/orders` with `{ product_id, quantity?, customer_id, operation_id? }`.
 * Answers 201 with the order and its `operation_id`; a checkout that did not succeed is the ledger's
 * problem+json (`operationError`: 503 `circuit_open` with `Retry-After`, 504 `outcome_unknown` with the
 * `operation_id` to resume, …); 400 `idempotency_key_missing` without the header, 422
 * `idempotency_key_mismatch` for a key reused with another body. Callers need the `mcp` scope, as the tools.
 */
export function giftGeniusRoutes(
  operations: OperationLedger,
  createOrder: OperationAction<OrderRequest, Order>,
): AppRoutes {
  return {
    prefix: '/giftgenius',
    plugin: async (app) => {
      app.post<{ Body: OrderBody }>(
        '/orders',
        { schema: { body: ORDER_BODY }, config: { idempotency: { required: true } } },
        async (request, reply) => {
          const { operation_id: operationId, ...order } = request.body;
          const result = await operations.execute(
            createOrder,
            { product_id: order.product_id, quantity: order.quantity, customer_id: order.customer_id },
            { operationId, signal: requestSignal(request), actor: 'http:checkout' },
          );
          if (result.outcome !== 'succeeded') throw operationError(result, { unknown: CHECKOUT_UNKNOWN });
          return reply.code(201).send({ ...result.result!, operation_id: result.operation_id });
        },
      );
    },
  };
}

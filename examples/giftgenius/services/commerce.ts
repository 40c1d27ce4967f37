import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { indexCatalog, loadCatalog } from './catalog.js';
import type { Product } from './catalog.js';
import { IdempotencyKeys, MAX_KEY_LENGTH, isValidKey, requestFingerprint } from './idempotency.js';
import type { KeyRecord } from './idempotency.js';
import {
  HttpProblem,
  bodyObject,
  integerField,
  invalid,
  optionalString,
  requiredString,
  usdField,
} from './problem.js';
import { startService } from './service.js';
import type { ServiceHandle, ServiceOptions } from './service.js';

/** A confirmed order. Amounts in USD; `created_at` is an ISO 8601 timestamp. */
export interface Order {
  order_id: string;
  status: 'confirmed';
  product_id: string;
  product_name: string;
  quantity: number;
  unit_price_usd: number;
  amount_usd: number;
  currency: 'usd';
  customer_id: string;
  idempotency_key: string;
  created_at: string;
}

/** A payment intent; this demo settles them at once, so `status` is always `succeeded`. */
export interface PaymentIntent {
  payment_intent_id: string;
  status: 'succeeded';
  amount_usd: number;
  currency: 'usd';
  customer_id: string;
  order_id: string | null;
  idempotency_key: string;
  created_at: string;
}

/** The header carrying the idempotency key (IETF httpapi Idempotency-Key draft; Stripe uses the same). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** Set to `true` on an answer replayed from an earlier request with the same key (as Stripe does). */
export const REPLAYED_HEADER = 'idempotent-replayed';

/** A validated write: `commit` performs it and returns the created resource and its id. */
interface Command<T> {
  commit(key: string): { id: string; resource: T };
}

/**
 * One idempotent `POST` collection with its lookups: `POST path` (needs `Idempotency-Key`),
 * `GET path/:id`, `GET path?idempotency_key=K` and `GET path` (all, oldest first).
 */
interface IdempotentCollection<T> {
  path: string;
  kind: string;
  noun: string;
  notFoundCode: string;
  items: Map<string, T>;
  parse(body: Record<string, unknown>): Command<T>;
}

function registerCollection<T>(
  app: FastifyInstance,
  keys: IdempotencyKeys,
  spec: IdempotentCollection<T>,
): void {
  const claims = new WeakMap<FastifyRequest, { record: KeyRecord; command: Command<T> }>();
  const releaseClaim = (request: FastifyRequest): void => {
    const claim = claims.get(request);
    if (claim !== undefined) keys.release(claim.record);
  };

  app.post(spec.path, {
    // preValidation runs before the fault hooks (preHandler): the key is held while a request is delayed or
    // hangs, as a real backend holds it while it works.
    preValidation: async (request, reply) => {
      const key = readKey(request);
      const fingerprint = requestFingerprint('POST', spec.path, request.body);
      const command = keys.get(key) === undefined ? spec.parse(bodyObject(request.body)) : undefined;
      const begun = keys.begin(key, fingerprint, spec.kind);
      if (begun.outcome === 'mismatch') {
        throw new HttpProblem(
          422,
          'idempotency_key_mismatch',
          'This Idempotency-Key was already used with a different request; use a new key for a new request.',
          { idempotency_key: key },
        );
      }
      if (begun.outcome === 'in_progress') {
        throw new HttpProblem(
          409,
          'idempotency_in_progress',
          'A request with this Idempotency-Key is still being processed; retry later.',
          { idempotency_key: key },
        );
      }
      if (begun.outcome === 'replay') return replay(reply, begun.record);
      if (command === undefined) throw new Error('a claimed key must have a parsed command');
      claims.set(request, { record: begun.record, command });
      // A request abandoned before it committed (client gone, service closing) leaves the key free.
      reply.raw.once('close', () => releaseClaim(request));
    },
    // Any answer other than the commit (an injected 503, an error) frees the key: nothing was done.
    onSend: async (request, _reply, payload) => {
      releaseClaim(request);
      return payload;
    },
    handler: async (request, reply) => {
      const claim = claims.get(request);
      if (claim === undefined) throw new Error('no idempotency claim for this request');
      const { id, resource } = claim.command.commit(claim.record.key);
      const headers = { location: `${spec.path}/${id}` };
      keys.complete(claim.record, { status: 201, body: resource, headers, resourceId: id });
      return reply.code(201).headers(headers).send(resource);
    },
  });

  app.get<{ Params: { id: string } }>(`${spec.path}/:id`, async (request) => {
    const item = spec.items.get(request.params.id);
    if (item === undefined) {
      throw new HttpProblem(404, spec.notFoundCode, `No ${spec.noun} has the id "${request.params.id}".`);
    }
    return item;
  });

  app.get<{ Querystring: { idempotency_key?: string } }>(spec.path, async (request) => {
    const key: unknown = request.query.idempotency_key;
    if (key !== undefined && typeof key !== 'string') throw invalid('Give idempotency_key at most once.');
    if (key === undefined) return { [spec.path.slice(1)]: [...spec.items.values()] };
    const record = keys.get(key);
    const item =
      record?.state === 'completed' && record.kind === spec.kind && record.resourceId !== undefined
        ? spec.items.get(record.resourceId)
        : undefined;
    if (item === undefined) {
      // 404 means nothing was accepted under this key (a request still running counts as nothing yet): a
      // reconciler may resend with the same key, and a resend while the first still runs gets 409.
      throw new HttpProblem(404, 'not_found', `No ${spec.noun} was accepted under this idempotency key.`, {
        idempotency_key: key,
      });
    }
    return item;
  });
}

function readKey(request: FastifyRequest): string {
  const key = request.headers[IDEMPOTENCY_KEY_HEADER];
  if (key === undefined || key === '') {
    throw new HttpProblem(400, 'idempotency_key_missing', 'This request needs an Idempotency-Key header.');
  }
  if (typeof key !== 'string' || !isValidKey(key)) {
    throw invalid(`Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters without spaces.`);
  }
  return key;
}

function replay(reply: FastifyReply, record: KeyRecord): FastifyReply {
  return reply
    .code(record.status ?? 200)
    .headers(record.headers ?? {})
    .header(REPLAYED_HEADER, 'true')
    .send(record.body);
}

/** Options of the commerce service: where it listens, and the catalog orders are priced from. */
export interface CommerceServiceOptions extends ServiceOptions {
  catalog?: readonly Product[];
}

/**
 * Starts the commerce service (state in memory, lost on close):
 * - `POST /orders` with header `Idempotency-Key` and body `{ product_id, quantity (1..100), customer_id }`
 *   → 201 {@link Order} with `Location`. Errors: 400 `idempotency_key_missing`, 400 `invalid_request`,
 *   400 `product_not_found`, 422 `idempotency_key_mismatch` (same key, different body), 409
 *   `idempotency_in_progress` (same key still running). Same key and body again → the stored 201 replayed
 *   with `Idempotent-Replayed: true`.
 * - `POST /payment_intents` likewise with `{ amount_usd, customer_id, order_id? }` → 201 {@link PaymentIntent};
 *   400 `order_not_found` for an unknown `order_id`.
 * - `GET /orders/:id`, `GET /payment_intents/:id` → 200, or 404 `order_not_found` / `payment_intent_not_found`.
 * - `GET /orders?idempotency_key=K` (and for payment intents): 200 with what was accepted under K, or 404
 *   `not_found` when nothing was (yet). Reconcile
 *   with this after an unknown outcome. `GET /orders` without a key lists every order, oldest first.
 * - `/_faults` (see `registerFaults`). Idempotency keys are shared by both collections: a key used for an
 *   order and then for a payment intent is a mismatch.
 */
export function startCommerceService(options: CommerceServiceOptions = {}): Promise<ServiceHandle> {
  const products = indexCatalog(options.catalog ?? loadCatalog());
  const orders = new Map<string, Order>();
  const paymentIntents = new Map<string, PaymentIntent>();
  const keys = new IdempotencyKeys();
  const nextId = (prefix: string, size: number): string => `${prefix}_${String(size + 1).padStart(6, '0')}`;

  return startService('commerce', options, (app) => {
    registerCollection<Order>(app, keys, {
      path: '/orders',
      kind: 'order',
      noun: 'order',
      notFoundCode: 'order_not_found',
      items: orders,
      parse(body) {
        const productId = requiredString(body, 'product_id', 100);
        const quantity = integerField(body.quantity, 'quantity', 1, 100);
        const customerId = requiredString(body, 'customer_id', 100);
        const product = products.get(productId);
        if (product === undefined) {
          throw new HttpProblem(400, 'product_not_found', `No product has the id "${productId}".`);
        }
        return {
          commit(key) {
            const order: Order = {
              order_id: nextId('ord', orders.size),
              status: 'confirmed',
              product_id: product.id,
              product_name: product.name,
              quantity,
              unit_price_usd: product.price_usd,
              amount_usd: Math.round(product.price_usd * 100 * quantity) / 100,
              currency: 'usd',
              customer_id: customerId,
              idempotency_key: key,
              created_at: new Date().toISOString(),
            };
            orders.set(order.order_id, order);
            return { id: order.order_id, resource: order };
          },
        };
      },
    });

    registerCollection<PaymentIntent>(app, keys, {
      path: '/payment_intents',
      kind: 'payment_intent',
      noun: 'payment intent',
      notFoundCode: 'payment_intent_not_found',
      items: paymentIntents,
      parse(body) {
        const amountUsd = usdField(body.amount_usd, 'amount_usd', { wholeCents: true });
        const customerId = requiredString(body, 'customer_id', 100);
        const orderId = optionalString(body, 'order_id', 100) ?? null;
        if (orderId !== null && !orders.has(orderId)) {
          throw new HttpProblem(400, 'order_not_found', `No order has the id "${orderId}".`);
        }
        return {
          commit(key) {
            const intent: PaymentIntent = {
              payment_intent_id: nextId('pi', paymentIntents.size),
              status: 'succeeded',
              amount_usd: amountUsd,
              currency: 'usd',
              customer_id: customerId,
              order_id: orderId,
              idempotency_key: key,
              created_at: new Date().toISOString(),
            };
            paymentIntents.set(intent.payment_intent_id, intent);
            return { id: intent.payment_intent_id, resource: intent };
          },
        };
      },
    });
  });
}

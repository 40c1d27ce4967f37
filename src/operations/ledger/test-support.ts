/** Shared by the ledger's tests: a scripted service whose sends and lookups follow a script. */
import { BreakwaterError } from '../../core/index.js';
import type { LookupResult, OperationAction, OperationCallContext } from './types.js';

/**
 * The ledger on a real SQLite store, with a scripted service: each `send` and `lookup` takes the next step of
 * its script (a function of the call), so every history (not sent, refused, done, cut off) is exact.
 */
export interface Order {
  order_id: string;
  sku: string;
}
export type Req = { sku: string };

export type SendStep = (ctx: OperationCallContext<Req>) => Promise<Order>;
export type LookupStep = (ctx: OperationCallContext<Req>) => Promise<LookupResult<Order>>;

export const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);

export class ScriptedService {
  readonly calls: string[] = [];
  readonly orders = new Map<string, Order>();
  sends: SendStep[] = [];
  lookups: LookupStep[] = [];

  private plain: OperationAction<Req, Order> | undefined;

  /** The action; without overrides always the same object (a ledger refuses two actions of one name). */
  action(overrides?: Partial<OperationAction<Req, Order>>): OperationAction<Req, Order> {
    if (overrides === undefined) return (this.plain ??= this.build({}));
    return this.build(overrides);
  }

  private build(overrides: Partial<OperationAction<Req, Order>>): OperationAction<Req, Order> {
    return {
      name: 'shop.create_order',
      target: 'POST shop /orders',
      retryAllowed: true,
      reconcile: (id) => ({ method: 'GET', path: `/orders?idempotency_key=${id}` }),
      send: (ctx) => {
        this.calls.push(
          `send#${ctx.attempt} ${ctx.operationId === ctx.correlationId ? 'id=corr' : 'id!=corr'}`,
        );
        const step = this.sends.shift();
        if (step === undefined) throw new Error('unexpected send');
        return step(ctx);
      },
      lookup: (ctx) => {
        this.calls.push('lookup');
        const step = this.lookups.shift();
        if (step === undefined) throw new Error('unexpected lookup');
        return step(ctx);
      },
      ...overrides,
    };
  }
}

/** The service takes the order (keyed by operation id) and answers. */
export const accept: SendStep = async (ctx) => ({
  order_id: `ord_${ctx.operationId.slice(-4)}`,
  sku: ctx.request.sku,
});
/** The connection drops after the request was written. */
export const cutOff: SendStep = async () => {
  throw new BreakwaterError('outcome_unknown', {
    kind: 'transient',
    outcome: 'unknown',
    details: { reason: 'ECONNRESET' },
  });
};
/** The service could not be reached: nothing was written. */
export const refusedConnection: SendStep = async () => {
  throw new BreakwaterError('upstream_unavailable', {
    kind: 'transient',
    outcome: 'failed',
    details: { reason: 'ECONNREFUSED', written: false },
  });
};
export const rejected: SendStep = async () => {
  throw new BreakwaterError('upstream_error', {
    kind: 'permanent',
    message: 'The shop could not accept this order: out of stock.',
    details: { reason: 'http_409' },
  });
};
export const found: LookupStep = async (ctx) => ({
  state: 'succeeded',
  result: { order_id: `ord_${ctx.operationId.slice(-4)}`, sku: ctx.request.sku },
});
export const notFound: LookupStep = async () => ({ state: 'not_found' });
/**
 * The service answered `status` (429, 503, …) and did not process the request, as `upstream/` reports it:
 * `upstream_unavailable`, outcome `failed`, `upstream_status`, and the wait from `Retry-After` when sent.
 */
export function answered(status: number, retryAfterMs?: number): SendStep {
  return async () => {
    throw new BreakwaterError('upstream_unavailable', {
      kind: 'transient',
      outcome: 'failed',
      retryAfterMs,
      message:
        retryAfterMs === undefined
          ? 'The shop is busy right now; try again shortly.'
          : `The shop is busy right now; try again in about ${retryAfterMs / 1000} seconds.`,
      details: {
        reason: `http_${status}`,
        written: true,
        upstream_status: status,
        dependency_code: 'shop_busy',
      },
    });
  };
}
/** The shop's breaker is open for `retryAfterMs` more: nothing was sent. */
export function breakerOpen(retryAfterMs: number): SendStep {
  return async () => {
    throw new BreakwaterError('circuit_open', {
      retryAfterMs,
      message: `The shop is temporarily unavailable after repeated failures; try again in about ${retryAfterMs / 1000} seconds.`,
      details: { reason: 'circuit_open', circuit_state: 'open', dependency_code: 'shop_unavailable' },
    });
  };
}

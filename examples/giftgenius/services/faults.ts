import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HangGate, pause } from '../../shared/hang.js';
import { sendProblem } from './problem.js';

/**
 * The fault switches of a GiftGenius service (all off by default):
 * - `latencyMs`: added before every request is handled (ms, 0..600000).
 * - `errorRate`: share of requests (0..1) answered 503 `service_unavailable` instead of being handled.
 * - `status`: every request (see `statusOn`) is answered with this HTTP status (400..599) instead of being
 *   handled, as problem+json with `injected: true`; 0 is off. Nothing is stored, so a commerce write answered
 *   this way leaves its `Idempotency-Key` free.
 * - `statusOn`: which requests `status` answers: `all` (default), `reads` (GET and HEAD: the status lookups;
 *   writes are handled as usual) or `writes` (every other method).
 * - `retryAfterS`: a `Retry-After` in whole seconds (1..86400) sent with every injected error answer (`status`
 *   and `errorRate`); 0 sends none.
 * - `hang`: requests wait without an answer until `hang` is switched off (then they are handled) or the
 *   service closes (then their sockets are destroyed).
 * - `commitThenDrop`: POST requests are handled in full (an order is stored), then the socket is destroyed
 *   instead of answering, so the caller cannot know whether the write happened. Reads still answer (unless
 *   `status` says otherwise), so a status lookup can reconcile.
 */
export interface Faults {
  latencyMs: number;
  errorRate: number;
  status: number;
  statusOn: StatusTarget;
  retryAfterS: number;
  hang: boolean;
  commitThenDrop: boolean;
}

/** The requests a `status` fault answers. */
export type StatusTarget = 'all' | 'reads' | 'writes';

/** Fault settings as given to `set` or `PUT /_faults`: fields left out are off. */
export type FaultSettings = Partial<Faults>;

/** The run-time switch of one service's faults, usable in process and mirrored over HTTP at `/_faults`. */
export interface FaultSwitch {
  /**
   * Replaces the faults with `settings` (fields left out are off, like `PUT`) and returns the result.
   * Switching `hang` off releases the hanging requests.
   *
   * @throws RangeError naming the field when a setting is out of range, of the wrong type or unknown.
   */
  set(settings: FaultSettings): Faults;
  /** Switches every fault off and releases hanging requests. */
  clear(): Faults;
  /** The current faults (a copy). */
  get(): Faults;
  /** How many requests are hanging right now. */
  hanging(): number;
}

/** No faults. */
export const NO_FAULTS: Readonly<Faults> = Object.freeze({
  latencyMs: 0,
  errorRate: 0,
  status: 0,
  statusOn: 'all',
  retryAfterS: 0,
  hang: false,
  commitThenDrop: false,
});

const MAX_LATENCY_MS = 600_000;
/** A day: the longest `Retry-After` a switch sends. */
const MAX_RETRY_AFTER_S = 86_400;
const STATUS_TARGETS: readonly StatusTarget[] = ['all', 'reads', 'writes'];
const KNOWN = Object.keys(NO_FAULTS).join(', ');

/**
 * Validates fault settings from an untrusted source (an HTTP body) into full {@link Faults}.
 *
 * @throws RangeError naming the field when a setting is out of range, of the wrong type or unknown.
 */
export function parseFaults(input: unknown): Faults {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new RangeError('Fault settings must be a JSON object.');
  }
  const settings = input as Record<string, unknown>;
  for (const key of Object.keys(settings)) {
    if (!(key in NO_FAULTS)) throw new RangeError(`Unknown fault "${key}"; known: ${KNOWN}.`);
  }
  const {
    latencyMs = 0,
    errorRate = 0,
    status = 0,
    statusOn = 'all',
    retryAfterS = 0,
    hang = false,
    commitThenDrop = false,
  } = settings;
  if (
    typeof latencyMs !== 'number' ||
    !Number.isFinite(latencyMs) ||
    latencyMs < 0 ||
    latencyMs > MAX_LATENCY_MS
  ) {
    throw new RangeError(`latencyMs must be a number of milliseconds from 0 to ${MAX_LATENCY_MS}.`);
  }
  if (typeof errorRate !== 'number' || !(errorRate >= 0 && errorRate <= 1)) {
    throw new RangeError('errorRate must be a number from 0 to 1.');
  }
  if (status !== 0 && !(Number.isInteger(status) && (status as number) >= 400 && (status as number) <= 599)) {
    throw new RangeError('status must be 0 (off) or an HTTP error status from 400 to 599.');
  }
  if (!STATUS_TARGETS.includes(statusOn as StatusTarget)) {
    throw new RangeError('statusOn must be "all", "reads" or "writes".');
  }
  if (
    typeof retryAfterS !== 'number' ||
    !Number.isInteger(retryAfterS) ||
    retryAfterS < 0 ||
    retryAfterS > MAX_RETRY_AFTER_S
  ) {
    throw new RangeError(`retryAfterS must be a whole number of seconds from 0 to ${MAX_RETRY_AFTER_S}.`);
  }
  if (retryAfterS > 0 && status === 0 && errorRate === 0) {
    throw new RangeError('retryAfterS is sent with injected errors only: set status or errorRate too.');
  }
  if (typeof hang !== 'boolean') throw new RangeError('hang must be true or false.');
  if (typeof commitThenDrop !== 'boolean') throw new RangeError('commitThenDrop must be true or false.');
  return {
    latencyMs,
    errorRate,
    status: status as number,
    statusOn: statusOn as StatusTarget,
    retryAfterS,
    hang,
    commitThenDrop,
  };
}

/** The problem code an injected `status` answer carries. */
const STATUS_CODES: Readonly<Record<number, string>> = {
  400: 'invalid_request',
  404: 'not_found',
  429: 'rate_limited',
  500: 'internal_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
  504: 'gateway_timeout',
};

/** The problem code of an injected `status` answer: a known one, else `request_refused` or `server_error`. */
export function injectedCode(status: number): string {
  return STATUS_CODES[status] ?? (status < 500 ? 'request_refused' : 'server_error');
}

/**
 * The fault state of one service and the waits it imposes. `random` (values in [0, 1)) decides which
 * requests an `errorRate` fails; inject a sequence in tests to make that deterministic.
 */
export class FaultController implements FaultSwitch {
  private faults: Faults = { ...NO_FAULTS };
  private readonly gate = new HangGate();

  constructor(private readonly random: () => number = Math.random) {}

  set(settings: FaultSettings): Faults {
    this.faults = parseFaults(settings);
    if (!this.faults.hang) this.gate.releaseAll();
    return this.get();
  }

  clear(): Faults {
    return this.set({});
  }

  get(): Faults {
    return { ...this.faults };
  }

  hanging(): number {
    return this.gate.size;
  }

  /** The status `method` is answered with instead of being handled (the `status` fault), or undefined. */
  statusFor(method: string): number | undefined {
    const { status, statusOn } = this.faults;
    if (status === 0) return undefined;
    const read = method === 'GET' || method === 'HEAD';
    return statusOn === 'all' || (statusOn === 'reads') === read ? status : undefined;
  }

  /** Whether this request draws an injected error; consults `random` only while 0 < `errorRate` < 1. */
  drawError(): boolean {
    const rate = this.faults.errorRate;
    return rate >= 1 || (rate > 0 && this.random() < rate);
  }

  /**
   * Waits while `hang` is on. Resolves true once released (hang switched off), false when `signal` aborts
   * first (the client left or the service is closing).
   */
  waitWhileHanging(signal: AbortSignal): Promise<boolean> {
    return this.gate.wait(() => this.faults.hang, signal);
  }
}

function isFaultRoute(request: FastifyRequest): boolean {
  const path = request.url.split('?', 1)[0];
  return path === '/_faults';
}

/** Aborts when the client goes away before the answer was written, or when `closing` aborts. */
function requestSignal(reply: FastifyReply, closing: AbortSignal): AbortSignal {
  const left = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) left.abort();
  });
  return AbortSignal.any([left.signal, closing]);
}

/** Ends a request without an answer: no handler runs, the socket is destroyed. */
function abandon(request: FastifyRequest, reply: FastifyReply): void {
  reply.hijack();
  request.raw.socket?.destroy();
}

/** Answers an injected error (problem+json, `injected: true`), with `Retry-After` when `retryAfterS` is set. */
function injectError(
  reply: FastifyReply,
  controller: FaultController,
  status: number,
  code: string,
  detail: string,
): FastifyReply {
  const { retryAfterS } = controller.get();
  if (retryAfterS > 0) reply.header('retry-after', String(retryAfterS));
  return sendProblem(reply, status, code, detail, { injected: true });
}

/**
 * Applies `controller`'s faults to every route of `app` but `/_faults`, and registers `GET`, `PUT` and
 * `DELETE /_faults`, each answering `{ faults, hanging_requests }`. A `PUT` body is {@link FaultSettings}
 * (400 `invalid_request` when it is not valid). `closing` aborts delayed and hanging requests (their
 * sockets are destroyed) so the service can close without waiting for them.
 *
 * Faults act in `preHandler`, after the body is parsed and after route `preValidation` hooks, so the
 * commerce service has already claimed a request's `Idempotency-Key` when the request is delayed or hangs.
 */
export function registerFaults(
  app: FastifyInstance,
  controller: FaultController,
  closing: AbortSignal,
): void {
  // Requests answered with an injected error: nothing was handled, so there is no commit to drop.
  const injected = new WeakSet<FastifyRequest>();
  app.addHook('preHandler', async (request, reply) => {
    if (isFaultRoute(request)) return;
    const signal = requestSignal(reply, closing);
    const { latencyMs } = controller.get();
    if (latencyMs > 0 && !(await pause(latencyMs, signal))) return abandon(request, reply);
    if (!(await controller.waitWhileHanging(signal))) return abandon(request, reply);
    const status = controller.statusFor(request.method);
    if (status !== undefined) {
      const detail = `The service answered ${status} instead of handling the request (injected fault).`;
      injected.add(request);
      return injectError(reply, controller, status, injectedCode(status), detail);
    }
    if (controller.drawError()) {
      const detail = 'The service is unavailable (injected fault).';
      injected.add(request);
      return injectError(reply, controller, 503, 'service_unavailable', detail);
    }
  });

  app.addHook('onSend', async (request, _reply, payload) => {
    const handled = !injected.has(request);
    if (request.method === 'POST' && handled && !isFaultRoute(request) && controller.get().commitThenDrop) {
      // The work is done and stored; losing the answer is the point (an unknown outcome for the caller).
      request.raw.socket?.destroy();
    }
    return payload;
  });

  const state = () => ({ faults: controller.get(), hanging_requests: controller.hanging() });
  app.get('/_faults', async () => state());
  app.put('/_faults', async (request, reply) => {
    try {
      controller.set(parseFaults(request.body));
    } catch (error) {
      if (error instanceof RangeError) return sendProblem(reply, 400, 'invalid_request', error.message);
      throw error;
    }
    return state();
  });
  app.delete('/_faults', async () => {
    controller.clear();
    return state();
  });
}

import type { ServerResponse } from 'node:http';
import {
  errorCodes,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type onRequestHookHandler,
} from 'fastify';
import {
  BreakwaterError,
  finite,
  REQUEST_SIGNAL,
  type Clock,
  type RequestSignalOf,
  type TimerHandle,
} from '../core/index.js';

/**
 * The server's handler timeout and the request signal that goes with it (`createServer`'s
 * `requestTimeoutMs`): a route that has not answered in time is answered for it with Fastify's own
 * `FST_ERR_HANDLER_TIMEOUT` error (so every handler and plugin that recognizes Fastify's timeout, like the
 * idempotency route, recognizes this one; `toHttpError` makes it a 504), and {@link requestSignal} aborts.
 *
 * Why not Fastify's `handlerTimeout` (5.x): its `request.signal` listens to the request's `'close'`, which
 * Node emits as soon as a request body has been read, so on every POST with a body the signal aborts before
 * the handler has done anything (fastify/fastify#6725, open): a route that passes it to `fetch` or a driver,
 * as the docs advise, fails every write. It also costs each request an AbortController, a listener and an
 * aborted signal with a `DOMException` stack at close, a cost the webhook and AI routes feel
 * (docs/performance.md#core-policies-and-the-http-edge). Here each request costs one timer and one shared
 * listener, cleared when its response closes; the signal exists only for a route that asks for it, and aborts
 * only on a timeout or when the client goes away before the answer is finished. A hijacked reply (SSE, MCP)
 * counts as answered: the timeout never cuts a stream. A route may set its own timeout
 * ({@link RouteTimeoutConfig}). How the server answers (504; 408 with `Connection: close` for a body still
 * arriving) is `problems.ts`'s.
 */
export function installRequestTimeout(app: FastifyInstance, timeoutMs: number, clock: Clock): void {
  app.decorateRequest(STATE, null);
  // Capability routes (the AI gateway's) find requestSignal here through core's key: they cannot import
  // server/.
  app.decorate(REQUEST_SIGNAL, requestSignal as RequestSignalOf);
  // A route's own timeout is read once, when the route is added (a bad one is a startup error), and given to
  // the route as an onRequest hook of its own that hands it to the request's timer: reading it per request
  // would cost a `request.routeOptions` (Fastify builds that object on every access).
  app.addHook('onRoute', (route) => {
    const own = (route.config as RouteTimeoutConfig | undefined)?.requestTimeoutMs;
    if (own === undefined) return;
    finite(`route ${String(route.method)} ${route.url}`, 'config.requestTimeoutMs', own, {
      min: 1,
      max: MAX_TIMEOUT_MS,
      integer: true,
    });
    const rearm: onRequestHookHandler = (request, _reply, done) => {
      (request as Tracked)[STATE]?.rearm(own);
      done();
    };
    const hooks = route.onRequest;
    route.onRequest = hooks === undefined ? [rearm] : [rearm, ...(Array.isArray(hooks) ? hooks : [hooks])];
  });
  app.addHook('onRequest', (request, reply, done) => {
    (request as Tracked)[STATE] = new RequestState(request, reply, timeoutMs, clock);
    done();
  });
  // An answer is under way (its onSend hooks run: the idempotency route stores it there): the timeout must
  // not write a 504 over it. Registered first, so it runs before every route's own onSend hooks.
  app.addHook('onSend', (request, _reply, payload, done) => {
    const state = (request as Tracked)[STATE];
    if (state !== null) state.sending = true;
    done(null, payload);
  });
}

/**
 * Stops the request timeout of a route that hijacks its reply to stream (SSE): a stream is never cut by it.
 * (Without this call the timer fires once, finds the reply hijacked and does nothing.)
 */
export function releaseRequestTimeout(request: FastifyRequest): void {
  (request as Tracked)[STATE]?.release();
}

/**
 * The signal of a request served by `createServer`: aborts when the route did not answer within
 * `requestTimeoutMs` (reason: Fastify's `FST_ERR_HANDLER_TIMEOUT` error) or when the client went away before
 * the answer was finished, a forced shutdown included (reason: a `BreakwaterError` `canceled`). Pass it to
 * `fetch`, drivers and policies, so the route's work stops with the request. Use it instead of Fastify's
 * `request.signal`, which on a POST with a body aborts as soon as the body is read (fastify/fastify#6725).
 * Made on first use; the same signal on every call.
 * @throws Error when `request` did not come through `createServer` (no request timeout is installed).
 */
export function requestSignal(request: FastifyRequest): AbortSignal {
  const state = (request as Tracked)[STATE];
  if (state === null || state === undefined) {
    throw new Error('requestSignal: this request was not received by a server made with createServer');
  }
  return state.signal();
}

const STATE = 'breakwaterRequestState';

/** Node's largest timer delay, ms. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * A route's own request timeout, in its Fastify `config` (`{ config: { requestTimeoutMs } }`, whole ms > 0):
 * for a route whose answers take longer than the server's (the AI gateway's completions).
 */
export interface RouteTimeoutConfig {
  requestTimeoutMs?: number;
}

type Tracked = FastifyRequest & { [STATE]: RequestState | null };

class RequestState {
  private timer: TimerHandle | undefined;
  private controller: AbortController | undefined;
  /** Why the signal aborts, once known: the timeout's error, or the client's leaving. */
  private reason: Error | undefined;
  /** The response has closed: the reason, if any, is final and the signal aborts with it. */
  private ended = false;
  /** The route's answer has entered its onSend hooks (see installRequestTimeout). */
  sending = false;
  /** The timeout found the answer under way once and gave it one more period. */
  private extended = false;
  /** When the timeout started, ms (clock). */
  private readonly startedAt: number;
  /** While a signal is in use: its listener on the connection (see {@link signal}). */
  private onSocketClose: (() => void) | undefined;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    private timeoutMs: number,
    private readonly clock: Clock,
  ) {
    this.startedAt = clock.now();
    this.timer = clock.setTimeout(this.expire, timeoutMs);
    // 'close' ends every response: after 'finish' when answered, before it when the client left or the
    // connection was cut. One shared listener; it finds this state on the response.
    (reply.raw as TrackedResponse)[STATE] = this;
    reply.raw.on('close', onResponseClose);
  }

  /**
   * Made on first use, even after the fact: asked for once the request timed out, it is already aborted. A
   * response that has its connection emits 'close' when the client leaves (the shared listener hears it); a
   * response still queued behind another pipelined one has no connection yet and would not, so for it the
   * signal listens to the connection too.
   */
  signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.ended) {
        if (this.reason !== undefined) this.controller.abort(this.reason);
      } else if (this.reply.raw.socket === null) {
        const socket = this.request.raw.socket;
        if (socket.destroyed) this.closed(false);
        else socket.once('close', (this.onSocketClose = () => this.closed(this.reply.raw.writableFinished)));
      }
    }
    return this.controller.signal;
  }

  /**
   * Gives the request `timeoutMs` from its start instead (a route's own, see installRequestTimeout). A longer
   * one touches no timer: the running one, when it fires, finds the time left and waits for it.
   */
  rearm(timeoutMs: number): void {
    if (this.timer === undefined) return;
    const shorter = timeoutMs < this.timeoutMs;
    this.timeoutMs = timeoutMs;
    if (!shorter) return;
    this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(
      this.expire,
      Math.max(0, this.startedAt + timeoutMs - this.clock.now()),
    );
  }

  release(): void {
    if (this.timer === undefined) return;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * The response closed: no timeout any more. The signal aborts now, with the timeout's error when the
   * timeout answered (only now, once that answer is out: a handler that rethrows the reason at once cannot
   * get its own answer in first), or with `canceled` when the answer never finished (the client left).
   */
  closed(finished: boolean): void {
    if (this.ended) return;
    this.release();
    this.ended = true;
    if (this.onSocketClose !== undefined) this.request.raw.socket.off('close', this.onSocketClose);
    if (!finished) this.reason ??= gone();
    if (this.reason !== undefined && this.controller !== undefined && !this.controller.signal.aborted) {
      this.controller.abort(this.reason);
    }
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const { reply } = this;
    if (reply.sent || reply.raw.destroyed) return;
    const left = this.extended ? 0 : this.startedAt + this.timeoutMs - this.clock.now();
    if (left > 0) {
      // A route's own, longer timeout (rearm): the rest of it.
      this.timer = this.clock.setTimeout(this.expire, left);
      return;
    }
    if (this.sending && !this.extended) {
      // The answer was made in time and is on its way: let it finish, but not forever (a store that hangs in
      // an onSend hook): one more period, then the connection is cut.
      this.extended = true;
      this.timer = this.clock.setTimeout(this.expire, this.timeoutMs);
      return;
    }
    const error = new errorCodes.FST_ERR_HANDLER_TIMEOUT(this.timeoutMs, this.request.routeOptions.url);
    this.reason = error;
    if (reply.raw.headersSent || this.sending) {
      // The answer had started (a stream that wrote its head, or one stuck in its onSend hooks): an error
      // answer can no longer go out in its place.
      reply.raw.destroy(error);
      return;
    }
    void reply.send(error);
  };
}

type TrackedResponse = ServerResponse & { [STATE]?: RequestState };

function onResponseClose(this: ServerResponse): void {
  (this as TrackedResponse)[STATE]?.closed(this.writableFinished);
}

function gone(): BreakwaterError {
  return new BreakwaterError('canceled', { message: 'The client went away before the answer was finished.' });
}

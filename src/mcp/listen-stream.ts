import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock, TimerHandle } from '../core/index.js';

/**
 * The parts every `subscriptions/listen` stream served by mcp/ itself shares (2026-07-28 "Subscriptions",
 * SEP-2575): the standard header check, the per-principal and overall bounds, and the SSE stream that opens
 * with `notifications/subscriptions/acknowledged`, keeps proxies awake with comment lines, tags every message
 * with the subscription id (the listen request's JSON-RPC id) under `_meta`, and ends gracefully with the
 * listen request's empty result. Used by `tasks-listen.ts` (task notifications) and `resource-listen.ts`
 * (resource updates).
 */

/** The `_meta` key of the subscription id on every message of a listen stream. */
export const SUBSCRIPTION_ID_META = 'io.modelcontextprotocol/subscriptionId';
/** The `_meta` key of a 2026-07-28 request's client capabilities. */
export const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';

/** The id and params of a `subscriptions/listen` request, or undefined for any other message. */
export function listenParams(
  body: unknown,
):
  { id: string | number; notifications: Record<string, unknown>; meta: Record<string, unknown> } | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const message = body as { method?: unknown; id?: unknown; params?: unknown };
  if (message.method !== 'subscriptions/listen') return undefined;
  if (typeof message.id !== 'string' && typeof message.id !== 'number') return undefined;
  const params = (message.params ?? {}) as { notifications?: unknown; _meta?: unknown };
  const notifications = params.notifications;
  if (typeof notifications !== 'object' || notifications === null) return undefined;
  const meta = typeof params._meta === 'object' && params._meta !== null ? params._meta : {};
  return {
    id: message.id,
    notifications: notifications as Record<string, unknown>,
    meta: meta as Record<string, unknown>,
  };
}

/** Answers a listen with a JSON-RPC error (no stream). */
export function replyError(
  res: ServerResponse,
  status: number,
  id: string | number,
  code: number,
  message: string,
  data?: unknown,
): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } }),
  );
}

/**
 * Checks the standard headers (SEP-2243) as the SDK checks them on the requests it serves: without
 * `MCP-Protocol-Version`, or with an `Mcp-Method` other than `subscriptions/listen`, answers HTTP 400 with
 * -32020 and returns false.
 */
export function listenHeadersOk(req: IncomingMessage, res: ServerResponse, id: string | number): boolean {
  if (req.headers['mcp-protocol-version'] === undefined) {
    replyError(res, 400, id, -32020, 'Bad Request: the MCP-Protocol-Version header is missing.');
    return false;
  }
  if (req.headers['mcp-method'] !== 'subscriptions/listen') {
    replyError(
      res,
      400,
      id,
      -32020,
      'Bad Request: the Mcp-Method header does not name subscriptions/listen.',
    );
    return false;
  }
  return true;
}

/** Counts open listens, per principal and in all, against their bounds. */
export class ListenSlots {
  private readonly open = new Map<string, number>();
  private count = 0;

  constructor(
    private readonly maxPerPrincipal: number,
    private readonly maxListens: number,
  ) {}

  /** Open listens right now. */
  get size(): number {
    return this.count;
  }

  /** Takes a slot for `principalId`: its release (idempotent), or undefined when a bound is reached. */
  take(principalId: string): (() => void) | undefined {
    const mine = this.open.get(principalId) ?? 0;
    if (this.count >= this.maxListens || mine >= this.maxPerPrincipal) return undefined;
    this.count++;
    this.open.set(principalId, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.count--;
      const left = (this.open.get(principalId) ?? 1) - 1;
      if (left === 0) this.open.delete(principalId);
      else this.open.set(principalId, left);
    };
  }
}

/** One open listen stream (see {@link openListenStream}). */
export interface ListenStream {
  /** Sends a notification; `params` get the subscription id under `_meta`. Nothing once closed. */
  notify(method: string, params: Record<string, unknown>): void;
  /** Ends the stream; `graceful` first sends the listen request's empty result. Idempotent. */
  end(graceful: boolean): void;
  readonly closed: boolean;
}

/** Options of {@link openListenStream}. */
export interface ListenStreamOptions {
  subscriptionId: string | number;
  /** The honoured filter, sent as `notifications` of the acknowledgement. */
  acknowledged: Record<string, unknown>;
  clock: Clock;
  /** A comment line is written this often, ms. */
  keepAliveMs: number;
  /** Called once when the stream ends, whichever way (client gone, {@link ListenStream.end}). */
  onEnd(): void;
}

/** Opens the SSE response of a listen and sends its acknowledgement. */
export function openListenStream(
  req: IncomingMessage,
  res: ServerResponse,
  options: ListenStreamOptions,
): ListenStream {
  const { subscriptionId, clock } = options;
  const meta = { [SUBSCRIPTION_ID_META]: subscriptionId };
  let closed = false;
  let keepAlive: TimerHandle | undefined;
  const write = (message: unknown): void => {
    if (!closed) res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  };
  const stream: ListenStream = {
    notify: (method, params) => write({ jsonrpc: '2.0', method, params: { ...params, _meta: meta } }),
    end(graceful) {
      if (closed) return;
      if (graceful)
        write({ jsonrpc: '2.0', id: subscriptionId, result: { resultType: 'complete', _meta: meta } });
      closed = true;
      if (keepAlive !== undefined) clock.clearTimeout(keepAlive);
      options.onEnd();
      res.end();
    },
    get closed() {
      return closed;
    },
  };
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
  });
  res.on('close', () => stream.end(false));
  req.on('aborted', () => stream.end(false));
  stream.notify('notifications/subscriptions/acknowledged', { notifications: options.acknowledged });
  const arm = (): void => {
    keepAlive = clock.setTimeout(() => {
      if (closed) return;
      res.write(': keepalive\n\n');
      arm();
    }, options.keepAliveMs);
  };
  arm();
  return stream;
}

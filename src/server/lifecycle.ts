import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import {
  BreakwaterError,
  GRACE_END,
  defineOptions,
  o,
  systemClock,
  type AtGraceEnd,
  type Clock,
} from '../core/index.js';
import { sendProblem } from '../http/index.js';
import { SERVER_DEFAULTS } from './options.js';

/** Something long-lived the server must end before it can close (an SSE stream). */
export interface Closable {
  /** Tells the client the server is going away and ends the response; resolves once it has ended. */
  shutdown(): Promise<void>;
}

/** Per-server state shared by the routes and the shutdown. */
export interface ServerState {
  /** Set once a close began: new requests get 503, answers carry `Connection: close`. */
  closing: boolean;
  readonly streams: Set<Closable>;
  /**
   * Answers that may finish within the grace (AI completion streams, through core's `GRACE_END`): each is
   * cut, with an error its client can read, when the grace runs out, before the connections are destroyed.
   */
  readonly cutAtGraceEnd: Set<() => void>;
  readonly clock: Clock;
  readonly shutdownGraceMs: number;
  /** Open connections, with the number of requests in flight on each. */
  readonly connections: Map<Socket, number>;
}

const states = new WeakMap<FastifyInstance, ServerState>();

/**
 * Creates the state of `app` and installs the hooks of a graceful close (they run on `app.close()` too):
 * - `onRequest`: a request arriving while closing gets 503 `overloaded` problem+json (not Fastify's plain
 *   JSON 503), so a load balancer or client sends it to another instance;
 * - `onSend`: the last answer in flight on a connection, sent while closing, carries `Connection: close`, so
 *   keep-alive connections do not hold the close up (an answer with another pipelined request queued behind
 *   it does not: that one would never be answered);
 * - `preClose`: every SSE stream is told and ended before the server stops accepting connections.
 */
export function installLifecycle(
  app: FastifyInstance,
  options: { clock: Clock; shutdownGraceMs: number },
): ServerState {
  const state: ServerState = {
    closing: false,
    streams: new Set(),
    cutAtGraceEnd: new Set(),
    clock: options.clock,
    shutdownGraceMs: options.shutdownGraceMs,
    connections: new Map(),
  };
  states.set(app, state);
  const atGraceEnd: AtGraceEnd = (cut) => {
    state.cutAtGraceEnd.add(cut);
    return () => void state.cutAtGraceEnd.delete(cut);
  };
  app.decorate(GRACE_END, atGraceEnd);
  // Connections are tracked because Node's `closeIdleConnections` misses one that never carried a request
  // (HTTP clients such as undici open a spare one): it would hold the close up until the client drops it.
  const { connections } = state;
  app.server.on('connection', (socket: Socket) => {
    connections.set(socket, 0);
    socket.once('close', () => connections.delete(socket));
  });
  // One shared 'close' listener for every response (`this`), not a closure per request.
  function onResponseClose(this: ServerResponse): void {
    const socket = this.req.socket;
    const inFlight = connections.get(socket);
    if (inFlight === undefined) return;
    connections.set(socket, inFlight - 1);
    // Closing: a connection whose last request just ended has nothing more to do here.
    if (inFlight === 1 && state.closing) socket.destroy();
  }
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    connections.set(socket, (connections.get(socket) ?? 0) + 1);
    response.on('close', onResponseClose);
  });
  // Callback hooks, not async ones: no promise per request.
  app.addHook('onRequest', (_request, reply, done) => {
    if (!state.closing) {
      done();
      return;
    }
    void reply.header('connection', 'close');
    void sendProblem(
      reply,
      new BreakwaterError('overloaded', { message: 'The server is shutting down; try again shortly.' }),
    );
  });
  // Only on the last request in flight on its connection: `Connection: close` on an answer with another
  // pipelined request queued behind it would end the connection before that one is answered. The last
  // response's close then ends the connection (onResponseClose).
  app.addHook('onSend', (request, reply, payload, done) => {
    if (state.closing && (connections.get(request.raw.socket) ?? 1) <= 1) {
      void reply.header('connection', 'close');
    }
    done(null, payload);
  });
  app.addHook('preClose', async () => {
    state.closing = true;
    await Promise.all([...state.streams].map((stream) => stream.shutdown()));
    // Connections with no request in flight lose nothing by closing now.
    for (const [socket, inFlight] of connections) if (inFlight === 0) socket.destroy();
  });
  return state;
}

/** The state {@link installLifecycle} made for `app`, if any. */
export function serverState(app: FastifyInstance): ServerState | undefined {
  return states.get(app);
}

/** Options of {@link closeGracefully}. */
export interface CloseOptions {
  /**
   * How long in-flight requests may take to finish, in ms (finite >= 0; default the server's
   * `shutdownGraceMs`, 10 000). Keep it below the orchestrator's kill timeout.
   */
  graceMs?: number;
}

/** Checks {@link CloseOptions}; `graceMs`'s default is the server's, so it is applied by the caller. */
const parseCloseOptions = defineOptions<CloseOptions>()('closeGracefully', {
  graceMs: o.number().nonnegative().optional(),
});

/**
 * Closes a server made by `createServer` without cutting off work that can still finish:
 * 1. from now on every new request gets 503 `overloaded` problem+json with `Connection: close`;
 * 2. every SSE stream gets a final `: shutting down` comment and ends (an `EventSource` reconnects on its
 *    own, with `Last-Event-ID`, to whichever instance the balancer picks);
 * 3. the server stops accepting connections, idle keep-alive connections close, and requests in flight
 *    finish, each answer closing its connection;
 * 4. after `graceMs` the answers registered through core's `GRACE_END` (AI completion streams) are cut, each
 *    ending with an error event its client can read; then the connections still open are destroyed (their
 *    `requestSignal(request)` aborts) and the close completes. Fastify's `onClose` hooks (a plugin closing its
 *    store) run last.
 * Resolves `{ forced: true }` when step 4 had to cut connections. Works on any Fastify instance (steps 1-2
 * need `createServer`'s hooks). It does not stop the jobs runtime or close the store: do that after.
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `closeGracefully`) when `graceMs` is negative
 *   or not finite.
 */
export async function closeGracefully(
  app: FastifyInstance,
  options: CloseOptions = {},
): Promise<{ forced: boolean }> {
  const state = states.get(app);
  const graceMs =
    parseCloseOptions(options).graceMs ?? state?.shutdownGraceMs ?? SERVER_DEFAULTS.shutdownGraceMs;
  const clock = state?.clock ?? systemClock;
  if (state !== undefined) state.closing = true;
  const closed = app.close();
  let timer: unknown;
  const graceOver = new Promise<'grace'>((resolve) => {
    timer = clock.setTimeout(() => resolve('grace'), graceMs);
  });
  try {
    const first = await Promise.race([closed.then(() => 'closed' as const), graceOver]);
    if (first === 'closed') return { forced: false };
    if (state !== undefined) {
      for (const cut of [...state.cutAtGraceEnd]) {
        try {
          cut();
        } catch {
          // A cut that fails loses only its last words: its connection is destroyed next anyway.
        }
      }
      state.cutAtGraceEnd.clear();
    }
    // closeAllConnections also ends the sockets of hijacked replies, so a stuck stream cannot hold this up.
    app.server.closeAllConnections();
    await closed;
    return { forced: true };
  } finally {
    clock.clearTimeout(timer);
  }
}

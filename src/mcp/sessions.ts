import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock, Disposable, TimerHandle } from '../core/index.js';
import { isInitialize, type SdkSession } from './sdk.js';

/** One MCP session and what hangs off it. */
export interface Session {
  /** Set right after the SDK session opened. */
  sdk: SdkSession;
  /** Progress bridges feeding this session; disposed when it closes. */
  readonly forwarders: Set<Disposable>;
  /** HTTP requests of this session still open (an SSE stream counts until it closes). */
  openRequests: number;
  /** When a request of this session last started or ended (ms, clock time). */
  lastSeenAt: number;
}

/** Options of {@link SessionTable}. */
export interface SessionTableOptions {
  clock: Clock;
  maxSessions: number;
  sessionIdleMs: number;
  /** Opens the SDK side of a new session, calling back when it is initialized and when it closed. */
  open(
    session: Session,
    onInitialized: (sdk: SdkSession) => void,
    onClosed: (sdk: SdkSession) => void,
  ): Promise<SdkSession>;
}

/** How often idle sessions are looked for, at most (ms). */
const SWEEP_MAX_MS = 60_000;

/**
 * The sessions of the Streamable HTTP endpoint (MCP 2025-11-25, "Transports": session management): a
 * request without `mcp-session-id` may only be an `initialize`, which opens a session; a request naming an
 * unknown (or closed) session gets 404, so the client starts a new one. Sessions with no open request for
 * `sessionIdleMs` are closed, so clients that vanish without a DELETE do not pile up.
 */
export class SessionTable {
  private readonly sessions = new Map<string, Session>();
  private closed = false;
  private sweepTimer: TimerHandle | undefined;

  constructor(private readonly options: SessionTableOptions) {}

  get size(): number {
    return this.sessions.size;
  }

  /** Answers one request (see `BreakwaterMcpServer.handle`). Never rejects. */
  async handle(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    try {
      if (this.closed) return rpcError(res, 503, -32000, 'The server is shutting down; reconnect shortly.');
      const id = req.headers['mcp-session-id'];
      if (typeof id === 'string' && id !== '') {
        const session = this.sessions.get(id);
        if (session === undefined) return rpcError(res, 404, -32001, 'Session not found');
        return await this.serve(session, req, res, body);
      }
      if (req.method === 'POST' && isInitialize(body)) return await this.initialize(req, res, body);
      if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE') {
        return rpcError(res, 405, -32000, 'Method not allowed.', { allow: 'GET, POST, DELETE' });
      }
      return rpcError(res, 400, -32000, 'Bad Request: No valid session ID provided');
    } catch {
      // The SDK answers its own failures; reaching here means something below it broke.
      if (!res.headersSent) return rpcError(res, 500, -32603, 'Internal error');
      res.destroy();
    }
  }

  /** Closes every session and stops the sweep. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopSweep();
    await Promise.all([...this.sessions.values()].map((session) => session.sdk.close()));
  }

  private async initialize(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    if (this.sessions.size >= this.options.maxSessions) {
      return rpcError(res, 503, -32000, 'Too many open sessions; try again later.', { 'retry-after': '5' });
    }
    const session: Session = {
      sdk: undefined as unknown as SdkSession,
      forwarders: new Set(),
      openRequests: 0,
      lastSeenAt: this.options.clock.now(),
    };
    session.sdk = await this.options.open(
      session,
      (sdk) => {
        this.sessions.set(sdk.sessionId!, session);
        this.startSweep();
      },
      (sdk) => this.closedSession(sdk, session),
    );
    await this.serve(session, req, res, body);
    // The SDK refused the initialize (a bad protocol message): nothing will ever reach this session again.
    if (session.sdk.sessionId === undefined) await session.sdk.close();
  }

  private async serve(
    session: Session,
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
  ): Promise<void> {
    const clock = this.options.clock;
    session.openRequests++;
    session.lastSeenAt = clock.now();
    res.once('close', () => {
      session.openRequests--;
      session.lastSeenAt = clock.now();
    });
    await session.sdk.handle(req, res, body);
  }

  private closedSession(sdk: SdkSession, session: Session): void {
    const id = sdk.sessionId;
    if (id !== undefined && this.sessions.get(id) === session) this.sessions.delete(id);
    for (const forwarder of session.forwarders) forwarder.dispose();
    session.forwarders.clear();
    if (this.sessions.size === 0) this.stopSweep();
  }

  private startSweep(): void {
    if (this.sweepTimer !== undefined || this.closed) return;
    const { clock, sessionIdleMs } = this.options;
    this.sweepTimer = clock.setTimeout(
      () => {
        this.sweepTimer = undefined;
        const now = clock.now();
        for (const session of this.sessions.values()) {
          if (session.openRequests <= 0 && now - session.lastSeenAt >= sessionIdleMs)
            void session.sdk.close();
        }
        if (this.sessions.size > 0) this.startSweep();
      },
      Math.min(sessionIdleMs, SWEEP_MAX_MS),
    );
  }

  private stopSweep(): void {
    if (this.sweepTimer === undefined) return;
    this.options.clock.clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
  }
}

/** Answers with a JSON-RPC error object (`id: null`: the request could not be read as one). */
function rpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

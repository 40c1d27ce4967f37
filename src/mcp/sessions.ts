import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock, Disposable, Principal, TimerHandle } from '../core/index.js';
import { callerPrincipal } from '../jobs/index.js';
import { isInitialize, type SdkSession } from './sdk.js';

/** One MCP session and what hangs off it. */
export interface Session {
  /** Set right after the SDK session opened. */
  sdk: SdkSession;
  /** The principal that initialized it: the only one it answers (anyone else: 404, as an unknown session). */
  readonly principal: Principal;
  /** Progress bridges feeding this session; disposed when it closes. */
  readonly forwarders: Set<Disposable>;
  /** HTTP requests of this session still open (an SSE stream counts until it closes). */
  openRequests: number;
  /** When a request of this session last started or ended (ms, clock time). */
  lastSeenAt: number;
  /** When its `initialize` arrived (ms, clock time). */
  readonly openedAt: number;
  /** True once a request after its `initialize` arrived (the SDK client sends one at once). */
  used: boolean;
}

/** Defaults of the session options of `createMcpServer` (see {@link SessionTableOptions}). */
export const SESSION_DEFAULTS = {
  maxSessions: 1_000,
  maxSessionsPerPrincipal: 100,
  sessionIdleMs: 3_600_000,
  unusedSessionMs: 60_000,
} as const;

/** Options of {@link SessionTable}. */
export interface SessionTableOptions {
  clock: Clock;
  /** Most sessions in all. */
  maxSessions: number;
  /** Most sessions of one principal. */
  maxSessionsPerPrincipal: number;
  /** A session with no open request for this long is closed (ms). */
  sessionIdleMs: number;
  /** A session never used after its `initialize` is closed this long after it (ms). */
  unusedSessionMs: number;
  /** Opens the SDK side of a new session, calling back when it is initialized and when it closed. */
  open(
    session: Session,
    onInitialized: (sdk: SdkSession) => void,
    onClosed: (sdk: SdkSession) => void,
  ): Promise<SdkSession>;
}

/** How often idle sessions are looked for, at most (ms). */
const SWEEP_MAX_MS = 60_000;

/** `Retry-After` of a refused `initialize`, in seconds. */
const RETRY_AFTER_S = 5;

/**
 * The sessions of the Streamable HTTP endpoint (MCP 2025-11-25, "Transports": session management): a
 * request without `mcp-session-id` may only be an `initialize`, which opens a session; a request naming an
 * unknown (or closed) session gets 404, so the client starts a new one.
 *
 * Sessions belong to the principal that initialized them (the current `PrincipalContext`, which `mcpRoutes`
 * sets from the HTTP edge's `request.principal`): a request of another principal naming one gets the same 404
 * "Session not found" as an unknown id. Each principal holds at most `maxSessionsPerPrincipal` sessions, so one
 * that opens sessions without end leaves others unaffected:
 * - a principal at its cap that initializes again closes its own least recently used idle session (no request
 *   open) to make room; when all of its sessions have a request open, the `initialize` gets 503 with
 *   `Retry-After: 5`;
 * - when the whole table (`maxSessions`) is full, the least recently used idle session of the principal
 *   holding the most sessions (at least as many as the caller would) is closed instead, the caller's own
 *   first among equals; none idle: 503 with `Retry-After: 5`.
 * A session with no open request for `sessionIdleMs`, or never used after its `initialize` for
 * `unusedSessionMs`, is closed by a sweep that runs every `min(sessionIdleMs, unusedSessionMs, 60 s)`, so
 * clients that vanish without a DELETE, and drive-by `initialize` calls, do not hold the table.
 */
export class SessionTable {
  private readonly sessions = new Map<string, Session>();
  /** Initialized sessions by principal id. */
  private readonly byPrincipal = new Map<string, Set<Session>>();
  /** `initialize` calls under way (not yet given an id) by principal id: they hold a place too. */
  private readonly pending = new Map<string, number>();
  private pendingTotal = 0;
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
      const principal = callerPrincipal();
      const id = req.headers['mcp-session-id'];
      if (typeof id === 'string' && id !== '') {
        const session = this.sessions.get(id);
        if (session === undefined || session.principal.id !== principal.id) {
          return rpcError(res, 404, -32001, 'Session not found');
        }
        session.used = true;
        return await this.serve(session, req, res, body);
      }
      if (req.method === 'POST' && isInitialize(body))
        return await this.initialize(principal, req, res, body);
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

  private async initialize(
    principal: Principal,
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
  ): Promise<void> {
    const refusal = this.makeRoom(principal.id);
    if (refusal !== undefined) {
      return rpcError(res, 503, -32000, refusal, { 'retry-after': String(RETRY_AFTER_S) });
    }
    const now = this.options.clock.now();
    const session: Session = {
      sdk: undefined as unknown as SdkSession,
      principal,
      forwarders: new Set(),
      openRequests: 0,
      lastSeenAt: now,
      openedAt: now,
      used: false,
    };
    const unreserve = this.reserve(principal.id);
    try {
      session.sdk = await this.options.open(
        session,
        (sdk) => {
          unreserve();
          this.register(sdk.sessionId!, session);
        },
        (sdk) => this.closedSession(sdk, session),
      );
      await this.serve(session, req, res, body);
    } finally {
      unreserve();
    }
    // The SDK refused the initialize (a bad protocol message): nothing will ever reach this session again.
    if (session.sdk.sessionId === undefined) await session.sdk.close();
  }

  /**
   * Frees a place for one more session of `principalId` (see the class docs), closing an idle session when
   * needed. @returns undefined when there is room now, else the reason for a 503.
   */
  private makeRoom(principalId: string): string | undefined {
    const { maxSessions, maxSessionsPerPrincipal } = this.options;
    const held = this.held(principalId);
    if (held >= maxSessionsPerPrincipal) {
      const victim = leastRecentlyUsedIdle(this.byPrincipal.get(principalId));
      if (victim === undefined) {
        return `Too many open sessions for this caller (${held} of ${maxSessionsPerPrincipal}), each with a request in progress; close one, or try again in about ${RETRY_AFTER_S} seconds.`;
      }
      this.evict(victim);
    }
    if (this.sessions.size + this.pendingTotal >= maxSessions) {
      const victim = this.fairVictim(principalId);
      if (victim === undefined) {
        return `Too many open sessions; try again in about ${RETRY_AFTER_S} seconds.`;
      }
      this.evict(victim);
    }
    return undefined;
  }

  /**
   * The session to close when the table is full and `principalId` initializes: the least recently used idle
   * session of the principal holding the most sessions, among those holding at least as many as the caller
   * will (the caller's own first among equals).
   */
  private fairVictim(principalId: string): Session | undefined {
    const after = this.held(principalId) + 1;
    const candidates = [...this.byPrincipal.entries()]
      .filter(([id, sessions]) => id === principalId || sessions.size >= after)
      .sort(([a, x], [b, y]) => y.size - x.size || Number(b === principalId) - Number(a === principalId));
    for (const [, sessions] of candidates) {
      const victim = leastRecentlyUsedIdle(sessions);
      if (victim !== undefined) return victim;
    }
    return undefined;
  }

  /** Sessions and `initialize` calls under way of `principalId`. */
  private held(principalId: string): number {
    return (this.byPrincipal.get(principalId)?.size ?? 0) + (this.pending.get(principalId) ?? 0);
  }

  /** Counts an `initialize` under way; the returned function uncounts it (once). */
  private reserve(principalId: string): () => void {
    this.pending.set(principalId, (this.pending.get(principalId) ?? 0) + 1);
    this.pendingTotal++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.pendingTotal--;
      const left = (this.pending.get(principalId) ?? 1) - 1;
      if (left === 0) this.pending.delete(principalId);
      else this.pending.set(principalId, left);
    };
  }

  private register(id: string, session: Session): void {
    this.sessions.set(id, session);
    let mine = this.byPrincipal.get(session.principal.id);
    if (mine === undefined) this.byPrincipal.set(session.principal.id, (mine = new Set()));
    mine.add(session);
    this.startSweep();
  }

  /** Takes `session` out of the table at once (its place is free now) and closes it. */
  private evict(session: Session): void {
    this.forget(session);
    void session.sdk.close();
  }

  private forget(session: Session): void {
    const id = session.sdk.sessionId;
    if (id !== undefined && this.sessions.get(id) === session) this.sessions.delete(id);
    const mine = this.byPrincipal.get(session.principal.id);
    if (mine?.delete(session) === true && mine.size === 0) this.byPrincipal.delete(session.principal.id);
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

  private closedSession(_sdk: SdkSession, session: Session): void {
    this.forget(session);
    for (const forwarder of session.forwarders) forwarder.dispose();
    session.forwarders.clear();
    if (this.sessions.size === 0) this.stopSweep();
  }

  private startSweep(): void {
    if (this.sweepTimer !== undefined || this.closed) return;
    const { clock, sessionIdleMs, unusedSessionMs } = this.options;
    this.sweepTimer = clock.setTimeout(
      () => {
        this.sweepTimer = undefined;
        const now = clock.now();
        for (const session of [...this.sessions.values()]) {
          if (session.openRequests > 0) continue;
          const idle = now - session.lastSeenAt >= sessionIdleMs;
          const unused = !session.used && now - session.openedAt >= unusedSessionMs;
          if (idle || unused) this.evict(session);
        }
        if (this.sessions.size > 0) this.startSweep();
      },
      Math.min(sessionIdleMs, unusedSessionMs, SWEEP_MAX_MS),
    );
  }

  private stopSweep(): void {
    if (this.sweepTimer === undefined) return;
    this.options.clock.clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
  }
}

/** The idle session (no open request) of `sessions` seen least recently, or undefined when none is idle. */
function leastRecentlyUsedIdle(sessions: Iterable<Session> | undefined): Session | undefined {
  let found: Session | undefined;
  for (const session of sessions ?? []) {
    if (session.openRequests > 0) continue;
    if (found === undefined || session.lastSeenAt < found.lastSeenAt) found = session;
  }
  return found;
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

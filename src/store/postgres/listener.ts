import pg from 'pg';
import type { JobEventType, StoreNotification } from '../jobs.js';
import { quoteIdent, storeTypes } from './db.js';

/** Reconnect delays of the LISTEN connection: exponential from the first to the cap, with full jitter. */
export const LISTENER_RECONNECT = { firstDelayMs: 100, maxDelayMs: 10_000 } as const;

const EVENT_TYPES: ReadonlySet<string> = new Set<JobEventType>([
  'job.started',
  'job.progress',
  'job.partial',
  'job.retrying',
  'job.completed',
  'job.failed',
  'job.canceled',
]);

/**
 * A NOTIFY payload as a {@link StoreNotification}, or undefined when it is not one (malformed JSON, an
 * unknown kind, a missing or mistyped field): anyone with access can NOTIFY on the channel, and a bad payload
 * must not reach listeners. Extra fields are dropped.
 */
export function parseNotification(payload: string | undefined): StoreNotification | undefined {
  if (payload === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  switch (v.kind) {
    case 'job_available':
      return typeof v.type === 'string' && typeof v.runAt === 'number'
        ? { kind: 'job_available', type: v.type, runAt: v.runAt }
        : undefined;
    case 'job_event':
      return typeof v.jobId === 'string' &&
        typeof v.seq === 'number' &&
        typeof v.eventType === 'string' &&
        EVENT_TYPES.has(v.eventType)
        ? { kind: 'job_event', jobId: v.jobId, seq: v.seq, eventType: v.eventType as JobEventType }
        : undefined;
    case 'cancel_requested':
      return typeof v.jobId === 'string' ? { kind: 'cancel_requested', jobId: v.jobId } : undefined;
    default:
      return undefined;
  }
}

/**
 * The one dedicated connection that LISTENs on the store's channel (a pooled connection would lose its
 * LISTEN when returned). It parses each notification and hands it to `deliver`.
 *
 * When the connection drops (server restart, network, an administrator's pg_terminate_backend), it
 * reconnects with exponential backoff and jitter ({@link LISTENER_RECONNECT}) until it succeeds or is
 * closed; its errors are handled here and never reach the process as an unhandled 'error' event.
 * Notifications sent while it is down are lost, so after every successful reconnect (LISTEN in place again;
 * not after the first connect) it delivers one `{ kind: 'external_change' }`: workers run a claim round and
 * followers re-read their job's events at once, which covers whatever was committed during the gap; the
 * consumers' own poll stays a safety net only.
 *
 * Backoff uses real timers, not the store's injected clock: it waits on a real server, and a test's fake
 * clock must not freeze reconnects. The timer is unref'd so it never keeps a process alive by itself.
 */
export class NotificationListener {
  private client: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private closed = false;
  /** True once a connection has LISTENed: a later successful connect is a reconnect. */
  private listened = false;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly deliver: (notification: StoreNotification) => void,
  ) {}

  /**
   * Connects and LISTENs once; the store awaits this at open, so a notification sent after open resolves
   * is received. @throws the connection's error when the first attempt fails (a bad URL fails at startup).
   */
  async start(): Promise<void> {
    await this.connect();
  }

  /** Stops reconnecting and ends the connection. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) await client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.url,
      types: storeTypes,
      // Detects a peer that vanished without closing the socket, which would otherwise look idle forever.
      keepAlive: true,
      application_name: 'breakwater-listener',
    });
    // Registered before connect: an 'error' without a listener would crash the process.
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (message.channel !== this.channel) return;
      const notification = parseNotification(message.payload);
      if (notification !== undefined) this.deliver(notification);
    });
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(this.channel)}`);
    } catch (error) {
      this.lost(client);
      throw error;
    }
    if (this.closed) {
      // close() ran while connecting and saw no client, or ended this one: make sure it is gone.
      await client.end().catch(() => undefined);
      return;
    }
    this.failures = 0;
    const reconnected = this.listened;
    this.listened = true;
    // After the LISTEN: anything committed from now on is heard; anything before it is re-read.
    if (reconnected) this.deliver({ kind: 'external_change' });
  }

  /** The current connection failed or ended: drop it and schedule one reconnect (unless closed). */
  private lost(client: pg.Client): void {
    if (client !== this.client) return; // an old connection's late event, or already handled
    this.client = undefined;
    client.removeAllListeners('notification');
    client.end().catch(() => undefined);
    if (this.closed) return;
    const ceiling = Math.min(
      LISTENER_RECONNECT.maxDelayMs,
      LISTENER_RECONNECT.firstDelayMs * 2 ** Math.min(this.failures, 20),
    );
    this.failures++;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.closed) return;
      this.connect().catch(() => undefined); // a failed attempt has already scheduled the next one
    }, Math.random() * ceiling);
    this.timer.unref();
  }
}

import { randomUUID } from 'node:crypto';
import type { Clock, Disposable, TimerHandle } from '../core/index.js';
import type { JobStore, StreamEventStore } from '../store/index.js';

/**
 * The resource updates the app announces (`notifyResourceUpdated`), carried to every gateway that shares the
 * store. An update is handed to this process's consumers at once, and appended to one stream of the store's
 * stream event log ({@link RESOURCE_UPDATES_STREAM}, the log resumable streams use; both backends, kept for
 * `STREAM_EVENT_RETENTION_MS` and pruned with the other stream events), which every other gateway reads after
 * its cursor: at once when the store says another process committed (SQLite's `external_change`), and every
 * {@link RESOURCE_FEED_POLL_MS} ms otherwise (PostgreSQL, whose stream appends are not notified). Each feed
 * tags what it appends with its own origin and skips it when reading, so no consumer hears an update twice.
 *
 * Delivery is at most once and best effort, like the notification itself: an update appended while no
 * consumer of a gateway wanted any is not replayed to it later, and a failed append or read is reported and
 * not retried (the next read starts where the last one ended).
 */

/** The stream id of the resource updates in the store's stream event log. */
export const RESOURCE_UPDATES_STREAM = 'breakwater:mcp:resource-updates';
/** How often a gateway reads other gateways' updates when the store does not announce them, ms. */
export const RESOURCE_FEED_POLL_MS = 1_000;

/** One announced update: `uri` changed; with `principalId`, only that principal (and admins) may hear it. */
export interface ResourceUpdate {
  uri: string;
  principalId?: string;
}

/** Options of {@link ResourceUpdateFeed}. */
export interface ResourceUpdateFeedOptions {
  /** The shared store; without one (or without its stream event log) updates stay in this process. */
  store?: JobStore;
  clock: Clock;
  /** Reading interval without store announcements, ms (default {@link RESOURCE_FEED_POLL_MS}). */
  pollMs?: number;
  /** A failed append or read (reporting only). */
  onError?(error: unknown): void;
}

/** Resource updates of this process and of every other gateway on the same store. */
export class ResourceUpdateFeed {
  private readonly origin = randomUUID();
  /** Each consumer, and whether it hears only other gateways' updates. */
  private readonly consumers = new Map<(update: ResourceUpdate) => void, boolean>();
  private readonly log: StreamEventStore | undefined;
  private cursor: string | undefined;
  private reading: Promise<void> | undefined;
  private again = false;
  private timer: TimerHandle | undefined;
  private announcements: Disposable | undefined;
  private demand = 0;
  private closed = false;

  constructor(private readonly options: ResourceUpdateFeedOptions) {
    this.log = isStreamEventStore(options.store) ? options.store : undefined;
  }

  /**
   * Hands every update to `consumer` (which must not throw) until disposed; with `remoteOnly`, only other
   * gateways' (for a consumer this process's publisher already told).
   */
  consume(consumer: (update: ResourceUpdate) => void, remoteOnly = false): Disposable {
    this.consumers.set(consumer, remoteOnly);
    return { dispose: () => void this.consumers.delete(consumer) };
  }

  /**
   * Reads other gateways' updates until the returned handle is disposed (reference counted: the log is read
   * while any handle is held). Updates appended before the first hold are not delivered.
   */
  hold(): Disposable {
    this.demand++;
    if (this.demand === 1) this.start();
    let disposed = false;
    return {
      dispose: () => {
        if (disposed) return;
        disposed = true;
        this.demand--;
        if (this.demand === 0) this.stop();
      },
    };
  }

  /** Delivers `update` here at once, and appends it for the other gateways. Never waits or throws. */
  publish(update: ResourceUpdate): void {
    this.deliver(update, false);
    if (this.log === undefined || this.closed) return;
    const message = { origin: this.origin, uri: update.uri, principalId: update.principalId ?? null };
    this.log.appendStreamEvent(RESOURCE_UPDATES_STREAM, message).catch((error) => this.report(error));
  }

  /** Stops reading. Idempotent. */
  close(): void {
    this.closed = true;
    this.stop();
  }

  private deliver(update: ResourceUpdate, remote: boolean): void {
    for (const [consumer, remoteOnly] of [...this.consumers]) if (remote || !remoteOnly) consumer(update);
  }

  private start(): void {
    if (this.log === undefined || this.closed) return;
    this.announcements = this.options.store!.subscribe((notification) => {
      if (notification.kind === 'external_change') void this.read();
    });
    this.arm();
    void this.read();
  }

  private stop(): void {
    this.announcements?.dispose();
    this.announcements = undefined;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.cursor = undefined;
  }

  private arm(): void {
    this.timer = this.options.clock.setTimeout(() => {
      this.timer = undefined;
      if (this.demand === 0 || this.closed) return;
      void this.read();
      this.arm();
    }, this.options.pollMs ?? RESOURCE_FEED_POLL_MS);
  }

  /**
   * Resolves once this gateway reads the log from a point (its anchor), so an update appended afterwards on
   * any gateway is delivered here while held; at once without a log. Call it after {@link hold}. A failing
   * store resolves it too (reported): the listen then hears this process's updates only, until a read works.
   */
  async ready(): Promise<void> {
    if (this.log === undefined || this.cursor !== undefined || this.demand === 0) return;
    await this.read();
    if (this.cursor === undefined && this.demand > 0) await this.read();
  }

  /** Reads the log after the cursor (coalesced: a read asked for during one runs once after it). */
  private read(): Promise<void> {
    if (this.log === undefined || this.demand === 0) return Promise.resolve();
    if (this.reading !== undefined) {
      this.again = true;
      return this.reading;
    }
    this.reading = this.readAll(this.log).finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async readAll(log: StreamEventStore): Promise<void> {
    try {
      do {
        this.again = false;
        if (this.cursor === undefined) {
          // The anchor: everything appended after it is this gateway's to hear.
          this.cursor = await log.appendStreamEvent(RESOURCE_UPDATES_STREAM, { origin: this.origin });
          continue;
        }
        const page = await log.streamEventsAfter(this.cursor);
        if (this.demand === 0) return;
        if (page === undefined) {
          this.cursor = undefined; // pruned: anchor again
          this.again = true;
          continue;
        }
        for (const event of page.events) {
          this.cursor = event.eventId;
          const update = remoteUpdate(event.message, this.origin);
          if (update !== undefined) this.deliver(update, true);
        }
        if (page.events.length > 0) this.again = true;
      } while (this.again && this.demand > 0);
    } catch (error) {
      this.report(error);
    }
  }

  private report(error: unknown): void {
    try {
      this.options.onError?.(error);
    } catch {
      // Reporting must not break the feed.
    }
  }
}

/** A logged message of another gateway as an update, or undefined (an anchor, this feed's own, malformed). */
function remoteUpdate(message: unknown, origin: string): ResourceUpdate | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const m = message as { origin?: unknown; uri?: unknown; principalId?: unknown };
  if (m.origin === origin || typeof m.uri !== 'string') return undefined;
  return typeof m.principalId === 'string' ? { uri: m.uri, principalId: m.principalId } : { uri: m.uri };
}

function isStreamEventStore(store: JobStore | undefined): store is JobStore & StreamEventStore {
  const candidate = store as Partial<StreamEventStore> | undefined;
  return (
    typeof candidate?.appendStreamEvent === 'function' && typeof candidate.streamEventsAfter === 'function'
  );
}

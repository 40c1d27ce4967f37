import type { IncomingMessage, ServerResponse } from 'node:http';
import { hasScope, type Clock, type Principal } from '../core/index.js';
import type { Catalog } from './catalog.js';
import {
  listenHeadersOk,
  listenParams,
  ListenSlots,
  openListenStream,
  replyError,
  type ListenStream,
} from './listen-stream.js';
import type { ResourceUpdateFeed } from './resource-feed.js';
import { RPC } from './types.js';

/**
 * Resource updates over `subscriptions/listen` (MCP 2026-07-28 "Subscriptions"): a listen whose filter names
 * `resourceSubscriptions` (resource URIs) is served here, not by the SDK (whose listen stream carries only
 * its in-memory events of this process). Updates come from the {@link ResourceUpdateFeed}, so an update the
 * app announces on any gateway sharing the store reaches listeners on every gateway.
 *
 * The stream: `notifications/subscriptions/acknowledged` with the honoured `resourceSubscriptions` (the URIs
 * the caller may read: those a resource or template visible to it in its catalog has, as for
 * `resources/subscribe`; any other is left out silently), then one `notifications/resources/updated`
 * `{ uri }` per update of an honoured URI, until the client closes it or the server closes (the listen
 * request's empty result). Every message carries the subscription id (the listen's JSON-RPC id) under
 * `_meta`. An update the app scoped to a principal (`principalId`) is sent only on that principal's listens
 * and admin ones, so a stranger who knows a URI does not learn when another principal's resource changes.
 *
 * Who may listen: any caller of `/mcp` on 2026-07-28 when the server has resources (otherwise the SDK
 * answers the listen). Bounds: {@link MAX_URIS_PER_LISTEN} URIs per listen (more, or not an array of
 * strings: -32602), and open listens per principal and in all (see {@link ResourceListenersOptions}; over:
 * -32603 "Subscription limit reached").
 */

/** Most URIs one `subscriptions/listen` may name. */
export const MAX_URIS_PER_LISTEN = 100;
/** Defaults of {@link ResourceListenersOptions}. */
export const RESOURCE_LISTEN_DEFAULTS = { maxPerPrincipal: 8, maxListens: 256, keepAliveMs: 15_000 } as const;

/** Options of {@link ResourceListeners}. */
export interface ResourceListenersOptions {
  feed: ResourceUpdateFeed;
  clock: Clock;
  /** Open resource listens of one principal, this process (default 8). */
  maxPerPrincipal?: number;
  /** Open resource listens in all, this process (default 256). */
  maxListens?: number;
  /** A comment line is written this often so proxies keep the stream open, ms (default 15 000). */
  keepAliveMs?: number;
}

/** The `subscriptions/listen` streams of resource updates, of one MCP server. */
export class ResourceListeners {
  private readonly slots: ListenSlots;
  private readonly streams = new Set<ListenStream>();

  constructor(private readonly options: ResourceListenersOptions) {
    this.slots = new ListenSlots(
      options.maxPerPrincipal ?? RESOURCE_LISTEN_DEFAULTS.maxPerPrincipal,
      options.maxListens ?? RESOURCE_LISTEN_DEFAULTS.maxListens,
    );
  }

  /** True for a `subscriptions/listen` whose filter names `resourceSubscriptions` (this class serves it). */
  static claims(body: unknown): boolean {
    return listenParams(body)?.notifications.resourceSubscriptions !== undefined;
  }

  /** Open listens right now. */
  get size(): number {
    return this.slots.size;
  }

  /**
   * Serves one listen {@link ResourceListeners.claims} took, for `principal`, whose visible resources are
   * `catalog` (bound to it, see `catalogFor`). Never rejects.
   */
  async serve(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    principal: Principal,
    catalog: Catalog,
  ): Promise<void> {
    const listen = listenParams(body)!;
    if (!listenHeadersOk(req, res, listen.id)) return;
    const uris = listen.notifications.resourceSubscriptions;
    if (
      !Array.isArray(uris) ||
      uris.some((uri) => typeof uri !== 'string') ||
      uris.length > MAX_URIS_PER_LISTEN
    ) {
      return replyError(
        res,
        200,
        listen.id,
        RPC.invalidParams,
        `resourceSubscriptions must be an array of at most ${MAX_URIS_PER_LISTEN} resource URIs.`,
      );
    }
    const honoured = new Set<string>();
    try {
      for (const uri of uris as string[]) if (catalog.resources?.knows(uri) === true) honoured.add(uri);
    } catch {
      return replyError(res, 200, listen.id, RPC.internalError, 'Internal error');
    }
    const release = this.slots.take(principal.id);
    if (release === undefined)
      return replyError(res, 200, listen.id, RPC.internalError, 'Subscription limit reached');
    const admin = hasScope(principal, 'admin');
    // Held before the acknowledgement: an update announced on any gateway after it is heard.
    const hold = this.options.feed.hold();
    await this.options.feed.ready();
    if (res.destroyed || res.writableEnded) {
      hold.dispose(); // the client left while the feed got ready
      return release();
    }
    // Registered before the acknowledgement is written (nothing can be announced in between: both are
    // synchronous), so every update announced after it is heard.
    const consumer = this.options.feed.consume((update) => {
      if (!honoured.has(update.uri)) return;
      if (update.principalId !== undefined && update.principalId !== principal.id && !admin) return;
      stream.notify('notifications/resources/updated', { uri: update.uri });
    });
    const stream: ListenStream = openListenStream(req, res, {
      subscriptionId: listen.id,
      acknowledged: { resourceSubscriptions: [...honoured] },
      clock: this.options.clock,
      keepAliveMs: this.options.keepAliveMs ?? RESOURCE_LISTEN_DEFAULTS.keepAliveMs,
      onEnd: () => {
        this.streams.delete(stream);
        consumer.dispose();
        hold.dispose();
        release();
      },
    });
    if (stream.closed) return;
    this.streams.add(stream);
  }

  /** Ends every open listen gracefully. */
  closeAll(): void {
    for (const stream of [...this.streams]) stream.end(true);
  }
}

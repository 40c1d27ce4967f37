/**
 * Resource subscriptions of the 2025 revisions (MCP 2025-11-25 "Resources", subscriptions): a session's
 * `resources/subscribe` names a URI it may read, and the app's `notifyResourceUpdated(uri)` sends
 * `notifications/resources/updated` to the sessions that subscribed to it, on their standalone stream. A
 * session keeps at most {@link MAX_SUBSCRIPTIONS_PER_SESSION} URIs; its subscriptions end with it.
 *
 * Who hears an update: only sessions whose principal may see the URI (checked at subscribe: a URI no
 * visible resource or template has is "Resource not found", -32602), and, when the app names the
 * resource's owner (`principalId`), only that principal's sessions and admin ones, so a stranger who knows a
 * URI does not learn when another principal's resource changes.
 */
import { hasScope, type Disposable } from '../core/index.js';
import type { Catalog } from './catalog.js';
import type { ResourceUpdateFeed } from './resource-feed.js';
import type { Session } from './sessions.js';
import { McpProtocolError, RPC } from './types.js';

/** Most URIs one session subscribes to at once. */
export const MAX_SUBSCRIPTIONS_PER_SESSION = 100;

/** What a session's `resources/subscribe` and `resources/unsubscribe` call. */
export interface SessionSubscriptions {
  /** @throws McpProtocolError -32602 for a URI the caller cannot see, or past the session's limit. */
  subscribe(uri: string): void;
  unsubscribe(uri: string): void;
}

/** The subscriptions of every open session. */
export class ResourceSubscriptions {
  private readonly bySession = new Map<Session, Set<string>>();
  private hold: Disposable | undefined;

  /**
   * With `feed`, other gateways' updates (see `resource-feed.ts`) reach this process's sessions too, read
   * while any session has a subscription.
   */
  constructor(private readonly feed?: ResourceUpdateFeed) {
    feed?.consume((update) => void this.notify(update.uri, update.principalId), true);
  }

  /** `session`'s side, checking URIs against `catalog` bound to its principal (see `catalogFor`). */
  forSession(session: Session, catalog: Catalog): SessionSubscriptions | undefined {
    const resources = catalog.resources;
    if (resources === undefined) return undefined;
    return {
      subscribe: (uri) => {
        if (!resources.knows(uri))
          throw new McpProtocolError(RPC.invalidParams, `Resource not found: ${uri}`, { uri });
        const uris = this.bySession.get(session) ?? new Set<string>();
        if (!uris.has(uri) && uris.size >= MAX_SUBSCRIPTIONS_PER_SESSION)
          throw new McpProtocolError(
            RPC.invalidParams,
            `A session may subscribe to at most ${MAX_SUBSCRIPTIONS_PER_SESSION} resources; unsubscribe from one first.`,
            { uri, limit: MAX_SUBSCRIPTIONS_PER_SESSION },
          );
        uris.add(uri);
        this.bySession.set(session, uris);
        this.holdWhileWanted();
      },
      unsubscribe: (uri) => {
        const uris = this.bySession.get(session);
        uris?.delete(uri);
        if (uris?.size === 0) this.bySession.delete(session);
        this.holdWhileWanted();
      },
    };
  }

  /** Forgets a closed session's subscriptions. */
  closed(session: Session): void {
    this.bySession.delete(session);
    this.holdWhileWanted();
  }

  /** Reads other gateways' updates while some session has a subscription. */
  private holdWhileWanted(): void {
    if (this.bySession.size > 0) this.hold ??= this.feed?.hold();
    else {
      this.hold?.dispose();
      this.hold = undefined;
    }
  }

  /**
   * Sends `notifications/resources/updated` for `uri` to every session subscribed to it (of `principalId` and
   * admins only, when given). Never waits or throws: a closed stream loses the notification. Returns how many
   * sessions it was sent to.
   */
  notify(uri: string, principalId?: string): number {
    let sent = 0;
    for (const [session, uris] of this.bySession) {
      if (!uris.has(uri)) continue;
      const principal = session.principal;
      if (principalId !== undefined && principal.id !== principalId && !hasScope(principal, 'admin'))
        continue;
      session.sdk.notify('notifications/resources/updated', { uri }).catch(() => undefined);
      sent++;
    }
    return sent;
  }
}

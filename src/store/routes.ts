/**
 * The versioned route contract (docs/ai-gateway.md#routes): named documents with immutable numbered
 * versions and one deployed version per name. `ai/` validates what a route says; the store keeps versions and
 * which one is live, so a deploy or a rollback is one atomic switch that every gateway sees on its next read.
 * Implemented by the SQLite and PostgreSQL stores as `store.routes`; one contract suite (`routes-contract.ts`)
 * runs on both.
 *
 * Times are ms since the epoch, read from the store's injected clock.
 */

/** Longest route name, in UTF-16 code units. Names are 1..128 of `[A-Za-z0-9._-]`. */
export const MAX_ROUTE_NAME_LENGTH = 128;

/** One immutable version of a route. */
export interface RouteVersion {
  name: string;
  /** 1, 2, 3, … per name, in creation order. */
  version: number;
  /** The route's definition (any JSON value; `ai/` gives it meaning). */
  definition: unknown;
  /** A note from whoever created it ("cheaper fallback for the demo"), or null. */
  note: string | null;
  createdAt: number;
}

/** A route's live state. */
export interface RouteHead {
  name: string;
  /** The deployed version, or null while only drafts exist. */
  deployed: number | null;
  /** The newest version (a draft when greater than `deployed`). */
  latest: number;
  /** When `deployed` last changed, or null. */
  deployedAt: number | null;
  /** Bumped by every create and deploy of this route: a cache compares it to know whether to re-read. */
  revision: number;
}

/** Storage of routes. Every method is one atomic step; after `close()` every method rejects with an Error. */
export interface RouteStore {
  /**
   * Stores a new version (a draft: not deployed) of `name`, numbered one above the newest (1 for a new name),
   * however many creates run at once.
   * @throws RangeError for a bad name or a note over 1000 characters; TypeError for a definition with no JSON
   *   form. Nothing is written.
   */
  create(name: string, definition: unknown, note?: string): Promise<RouteVersion>;

  /**
   * Makes `version` of `name` the deployed one (also an earlier one: a rollback). Resolves the new head, or
   * undefined when that version does not exist (nothing changed).
   */
  deploy(name: string, version: number): Promise<RouteHead | undefined>;

  /** The deployed version of `name`, or undefined (unknown name, or nothing deployed yet). */
  deployed(name: string): Promise<RouteVersion | undefined>;

  /** One version, or undefined. */
  get(name: string, version: number): Promise<RouteVersion | undefined>;

  /** Every version of `name`, newest first (empty for an unknown name). */
  versions(name: string): Promise<RouteVersion[]>;

  /** Every route's head, by name. */
  heads(): Promise<RouteHead[]>;

  /**
   * A number that changes whenever any route is created or deployed (in any process): a gateway polls it to
   * know when its cached deployed routes are stale. Cheap: one row.
   */
  revision(): Promise<number>;
}

/**
 * Cursor pagination of the catalog's lists (MCP "Pagination"): a page holds at most `pageSize` entries and,
 * while more follow, an opaque `nextCursor`. The cursor is the base64url of `<list>:<offset>`: opaque to
 * clients (they must not parse it), bound to its list, checked when it comes back. A list may change between
 * pages (a template's `list`, a deploy): a client then sees a shifted page, never an error or a repeat loop.
 */
import type { ListPage } from './catalog.js';
import { McpProtocolError, RPC } from './types.js';

/** Longest cursor accepted (a real one is far shorter). */
const MAX_CURSOR_CHARS = 256;

/**
 * The page of `items` at `cursor` (undefined: the first), named `key`.
 * @throws McpProtocolError -32602 with `data: { cursor }` for a cursor this server did not make for this list,
 *   or one past its end.
 */
export function pageOf<K extends string, T>(
  key: K,
  items: readonly T[],
  cursor: string | undefined,
  pageSize: number,
): ListPage<K, T> {
  const offset = cursor === undefined ? 0 : offsetOf(key, cursor, items.length);
  const page = { [key]: items.slice(offset, offset + pageSize) } as ListPage<K, T>;
  const next = offset + pageSize;
  if (next < items.length) page.nextCursor = Buffer.from(`${key}:${next}`).toString('base64url');
  return page;
}

function offsetOf(key: string, cursor: string, length: number): number {
  const bad = (): McpProtocolError =>
    new McpProtocolError(RPC.invalidParams, 'Invalid cursor: it was not made for this list.', {
      cursor: cursor.slice(0, MAX_CURSOR_CHARS),
    });
  if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor))
    throw bad();
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^([A-Za-z]+):(\d{1,9})$/.exec(text);
  if (match === null || match[1] !== key) throw bad();
  const offset = Number(match[2]);
  // Never issued: the first page has no cursor.
  if (offset === 0) throw bad();
  // A list that shrank since the cursor was made ends there: an empty last page, not an error.
  return Math.min(offset, length);
}

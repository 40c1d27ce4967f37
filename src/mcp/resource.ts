import { defineOptions, o } from '../core/index.js';
import { TOOL_DEADLINE_DEFAULT_MS, TOOL_DEADLINE_MAX_MS, type ToolContext } from './tool.js';

/** What a resource's `read` (and a prompt's `get`) gets: the deadline's signal, the deadline, the request's id. */
export type ReadContext = Pick<ToolContext, 'signal' | 'deadline' | 'correlationId'>;

/** A resource's body: a string is served as `text`, bytes as a base64 `blob` (MCP "Resource contents"). */
export type ResourceBody = string | Uint8Array;

/** One entry of `resources/list` (MCP `Resource`). */
export interface ResourceListing {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  _meta?: Record<string, unknown>;
}

/** One entry of a `resources/read` result's `contents`: text or a base64 blob. */
export type ResourceContents =
  | { uri: string; mimeType?: string; text: string; _meta?: Record<string, unknown> }
  | { uri: string; mimeType?: string; blob: string; _meta?: Record<string, unknown> };

/** The definition of {@link resource}. */
export interface ResourceDefinition {
  /** The resource's URI: an absolute URI (`scheme:…`, e.g. `giftgenius://catalog/categories`). */
  uri: string;
  /** Its name (non-empty), shown in `resources/list`. */
  name: string;
  title?: string;
  description?: string;
  /** The MIME type of its contents (e.g. `application/json`); given on the listing and on every read. */
  mimeType?: string;
  /** The read's whole budget in ms: integer in [1, 30 000], default 10 000 (as tools). */
  deadlineMs?: number;
  /**
   * The resource's `_meta` (a plain object, JSON as it is), given on the listing and on every read's contents
   * alike: extensions read it from either (MCP Apps reads a UI resource's `_meta.ui` from the read's
   * contents, the listing being its fallback). Default none.
   */
  meta?: Record<string, unknown>;
  /**
   * Reads the contents, under the deadline and the caller's `PrincipalContext`. What it throws (and a read
   * still running at the deadline) is answered as a JSON-RPC error (see `catalog.ts`).
   */
  read(ctx: ReadContext): ResourceBody | Promise<ResourceBody>;
}

/** A resource `createMcpServer` serves (made by {@link resource}). */
export interface McpResource {
  readonly kind: 'resource';
  readonly uri: string;
  readonly name: string;
  readonly deadlineMs: number;
  readonly mimeType?: string;
  readonly meta?: Record<string, unknown>;
  readonly listing: ResourceListing;
  readonly read: ResourceDefinition['read'];
}

/** `scheme:` then anything: an absolute URI (RFC 3986, section 3.1). */
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/;

const parseResource = defineOptions<ResourceDefinition>()('resource', {
  uri: o
    .string()
    .min(1)
    .refine((uri) => ABSOLUTE_URI.test(uri), 'an absolute URI (scheme:…) without spaces'),
  name: o.string().min(1),
  title: o.string().min(1).optional(),
  description: o.string().min(1).optional(),
  mimeType: o.string().min(1).optional(),
  deadlineMs: o.number().int().min(1).max(TOOL_DEADLINE_MAX_MS).default(TOOL_DEADLINE_DEFAULT_MS),
  meta: o.record<Record<string, unknown>>('a plain object').optional(),
  read: o.fn<ResourceDefinition['read']>(),
});

/**
 * Defines a static resource (MCP "Resources"): listed by `resources/list`, read by `resources/read` with its
 * exact URI. A read runs like a tool call: under its deadline, for the calling principal.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `resource`) naming every bad option: a URI
 *   that is not absolute, an empty name, title, description or MIME type, a `deadlineMs` not an integer in
 *   [1, 30 000], a `meta` that is not a plain object, a `read` that is not a function.
 */
export function resource(definition: ResourceDefinition): McpResource {
  const { uri, name, title, description, mimeType, deadlineMs, meta, read } = parseResource(definition);
  const listing: ResourceListing = { uri, name };
  if (title !== undefined) listing.title = title;
  if (description !== undefined) listing.description = description;
  if (mimeType !== undefined) listing.mimeType = mimeType;
  if (meta !== undefined) listing._meta = meta;
  return { kind: 'resource', uri, name, deadlineMs, mimeType, meta, listing, read };
}

/**
 * The `contents` of a read: one entry, text for a string, a base64 blob for bytes.
 * @throws TypeError when `body` is neither (a bug of the resource; answered as an internal error).
 */
export function contentsOf(item: McpResource, body: unknown): ResourceContents[] {
  const mime = item.mimeType === undefined ? {} : { mimeType: item.mimeType };
  const meta = item.meta === undefined ? {} : { _meta: item.meta };
  if (typeof body === 'string') return [{ uri: item.uri, ...mime, text: body, ...meta }];
  if (body instanceof Uint8Array)
    return [{ uri: item.uri, ...mime, blob: Buffer.from(body).toString('base64'), ...meta }];
  throw new TypeError(`resource ${item.uri}: read must return a string or a Uint8Array`);
}

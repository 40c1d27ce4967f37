import { defineOptions, o } from '../core/index.js';
import { TOOL_DEADLINE_DEFAULT_MS, TOOL_DEADLINE_MAX_MS, type ToolContext } from './tool.js';

/**
 * What a resource's `read` (and a prompt's `get`, a template's `list` and `complete`) gets: the deadline's
 * signal, the deadline, the request's id, and `log` (see {@link ToolContext.log}).
 */
export type ReadContext = Pick<ToolContext, 'signal' | 'deadline' | 'correlationId' | 'log'>;

/**
 * A cache hint of the 2026-07-28 revision ("Caching", SEP-2549): how long a client may reuse a result, in ms
 * (a safe integer >= 0), and whether shared caches may keep it (`public`) or only the caller (`private`).
 * A field left out keeps the SDK's default (`ttlMs: 0`, `cacheScope: 'private'`). The 2025 revisions have
 * no such fields: their results never carry them.
 */
export interface CacheHint {
  ttlMs?: number;
  cacheScope?: 'public' | 'private';
}

/** Checks a {@link CacheHint} option. */
export const cacheHintOption = o
  .object(
    {
      ttlMs: o.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
      cacheScope: o.enum(['public', 'private'] as const).optional(),
    },
    'a cache hint { ttlMs?, cacheScope? }',
  )
  .optional();

/** A scope token (RFC 6749, section 3.3): printable ASCII but space, `"` and backslash. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** Checks a `scopes` option (resources, templates, prompts): scope tokens, default none. */
export const scopesOption = o
  .custom<readonly string[]>(
    (v) => Array.isArray(v) && v.every((scope) => typeof scope === 'string' && SCOPE_TOKEN.test(scope)),
    'an array of scope tokens (printable ASCII, no space)',
  )
  .default([]);

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
   * Scopes a caller must hold, all of them (`admin` holds every scope), to see the resource: a caller
   * without them does not find it in `resources/list` and gets "not found" (-32602) on a read, as for a URI
   * that does not exist. Default none.
   */
  scopes?: readonly string[];
  /** The cache hint of its reads on 2026-07-28 (see {@link CacheHint}). Default the SDK's. */
  cacheHint?: CacheHint;
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
  readonly scopes: readonly string[];
  readonly cacheHint?: CacheHint;
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
  scopes: scopesOption,
  cacheHint: cacheHintOption,
  meta: o.record<Record<string, unknown>>('a plain object').optional(),
  read: o.fn<ResourceDefinition['read']>(),
});

/**
 * Defines a static resource (MCP "Resources"): listed by `resources/list`, read by `resources/read` with its
 * exact URI. A read runs like a tool call: under its deadline, for the calling principal.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `resource`) naming every bad option: a URI
 *   that is not absolute, an empty name, title, description or MIME type, a `deadlineMs` not an integer in
 *   [1, 30 000], `scopes` that are not scope tokens, a bad `cacheHint`, a `meta` that is not a plain object, a
 *   `read` that is not a function.
 */
export function resource(definition: ResourceDefinition): McpResource {
  const { uri, name, title, description, mimeType, deadlineMs, scopes, cacheHint, meta, read } =
    parseResource(definition);
  const listing: ResourceListing = { uri, name };
  if (title !== undefined) listing.title = title;
  if (description !== undefined) listing.description = description;
  if (mimeType !== undefined) listing.mimeType = mimeType;
  if (meta !== undefined) listing._meta = meta;
  return { kind: 'resource', uri, name, deadlineMs, mimeType, meta, listing, scopes, cacheHint, read };
}

/**
 * The `contents` of a read: one entry, text for a string, a base64 blob for bytes.
 * @throws TypeError when `body` is neither (a bug of the resource; answered as an internal error).
 */
export function contentsOf(
  item: { uri: string; mimeType?: string; meta?: Record<string, unknown> },
  body: unknown,
): ResourceContents[] {
  const mime = item.mimeType === undefined ? {} : { mimeType: item.mimeType };
  const meta = item.meta === undefined ? {} : { _meta: item.meta };
  if (typeof body === 'string') return [{ uri: item.uri, ...mime, text: body, ...meta }];
  if (body instanceof Uint8Array)
    return [{ uri: item.uri, ...mime, blob: Buffer.from(body).toString('base64'), ...meta }];
  throw new TypeError(`resource ${item.uri}: read must return a string or a Uint8Array`);
}

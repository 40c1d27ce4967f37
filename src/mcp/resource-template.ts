import { defineOptions, o } from '../core/index.js';
import {
  cacheHintOption,
  scopesOption,
  type CacheHint,
  type ReadContext,
  type ResourceBody,
  type ResourceListing,
} from './resource.js';
import { TOOL_DEADLINE_DEFAULT_MS, TOOL_DEADLINE_MAX_MS } from './tool.js';
import { parseUriTemplate, type UriTemplate } from './uri-template.js';

/** One entry of `resources/templates/list` (MCP `ResourceTemplate`). */
export interface ResourceTemplateListing {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}

/**
 * Completes one variable (or prompt argument): the candidates for what the user typed so far (`value`), best
 * first. `ctx.arguments` holds the variables (arguments) the client already resolved (MCP `context.arguments`).
 * Breakwater sends the first 100 (MCP "Completion": at most 100 values), with `total` and `hasMore`.
 */
export type Completer = (
  value: string,
  ctx: ReadContext & { arguments: Readonly<Record<string, string>> },
) => readonly string[] | Promise<readonly string[]>;

/** The definition of {@link resourceTemplate}. */
export interface ResourceTemplateDefinition {
  /**
   * An RFC 6570 URI template of levels 1 to 3 (`giftgenius://orders/{orderId}`, `files{/path}{?rev}`): simple,
   * reserved, fragment, label, path, path-parameter and query expressions; no `:n` or `*` modifiers.
   */
  uriTemplate: string;
  /** Its name (non-empty), shown in `resources/templates/list`. */
  name: string;
  title?: string;
  description?: string;
  /** The MIME type of what it reads; on the listing and on every read. */
  mimeType?: string;
  /** A read's (and a `list`'s, a completion's) whole budget in ms: integer in [1, 30 000], default 10 000. */
  deadlineMs?: number;
  /** Scopes a caller must hold to see the template and read through it (as a resource's). Default none. */
  scopes?: readonly string[];
  /** The cache hint of its reads on 2026-07-28 (see {@link CacheHint}). Default the SDK's. */
  cacheHint?: CacheHint;
  /**
   * Reads the resource a URI of the template names, from its variables (percent-decoded; a query variable
   * the URI lacks is absent), under the deadline and the caller's `PrincipalContext`. To keep a resource from
   * a caller, throw `BreakwaterError('not_found')`: the read is then answered -32602 "Resource not found", as
   * a URI no resource has.
   */
  read(
    variables: Readonly<Record<string, string>>,
    ctx: ReadContext & { uri: string },
  ): ResourceBody | Promise<ResourceBody>;
  /**
   * The concrete resources of the template the caller may see, added to `resources/list` (default none). Runs
   * under the deadline, for the caller; at most 1 000 entries are taken.
   */
  list?(ctx: ReadContext): readonly ResourceListing[] | Promise<readonly ResourceListing[]>;
  /** Completers of its variables, by name (each must be a variable of the template). Default none. */
  complete?: Readonly<Record<string, Completer>>;
}

/** A resource template `createMcpServer` serves (made by {@link resourceTemplate}). */
export interface McpResourceTemplate {
  readonly kind: 'resourceTemplate';
  readonly uriTemplate: string;
  readonly name: string;
  readonly deadlineMs: number;
  readonly mimeType?: string;
  readonly scopes: readonly string[];
  readonly cacheHint?: CacheHint;
  readonly template: UriTemplate;
  readonly listing: ResourceTemplateListing;
  readonly read: ResourceTemplateDefinition['read'];
  readonly list?: ResourceTemplateDefinition['list'];
  readonly complete: Readonly<Record<string, Completer>>;
}

const isTemplate = (value: unknown): boolean => {
  try {
    return typeof value === 'string' && parseUriTemplate(value).source === value;
  } catch {
    return false;
  }
};

const parseTemplate = defineOptions<ResourceTemplateDefinition>()(
  'resourceTemplate',
  {
    uriTemplate: o
      .string()
      .min(1)
      .refine(
        (value) => isTemplate(value) && /^[A-Za-z][A-Za-z0-9+.-]*:/.test(value),
        'an RFC 6570 URI template (levels 1-3) of an absolute URI (scheme:…)',
      ),
    name: o.string().min(1),
    title: o.string().min(1).optional(),
    description: o.string().min(1).optional(),
    mimeType: o.string().min(1).optional(),
    deadlineMs: o.number().int().min(1).max(TOOL_DEADLINE_MAX_MS).default(TOOL_DEADLINE_DEFAULT_MS),
    scopes: scopesOption,
    cacheHint: cacheHintOption,
    read: o.fn<ResourceTemplateDefinition['read']>(),
    list: o.fn<NonNullable<ResourceTemplateDefinition['list']>>().optional(),
    complete: o
      .custom<Record<string, Completer>>(
        (v) =>
          typeof v === 'object' &&
          v !== null &&
          !Array.isArray(v) &&
          Object.values(v).every((fn) => typeof fn === 'function'),
        'an object of completer functions by variable name',
      )
      .optional(),
  },
  ({ uriTemplate, complete }, report) => {
    if (complete === undefined || !isTemplate(uriTemplate)) return;
    const variables = parseUriTemplate(uriTemplate).variables;
    const unknown = Object.keys(complete).find((name) => !variables.includes(name));
    if (unknown !== undefined) report('complete', `completers of the template's variables`, unknown);
  },
);

/**
 * Defines a resource template (MCP "Resource Templates"): listed by `resources/templates/list`; a
 * `resources/read` of a URI no static resource has is matched against the templates, in the order given, and
 * read by the first that makes it. Its variables are completable (`completion/complete` with a
 * `ref/resource` reference) when `complete` names them.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `resourceTemplate`) naming every bad option: a
 *   template that is not RFC 6570 levels 1-3 of an absolute URI, an empty name, title, description or MIME
 *   type, a `deadlineMs` not an integer in [1, 30 000], bad `scopes` or `cacheHint`, a `read` or `list` that
 *   is not a function, a `complete` that is not functions or names a variable the template lacks.
 */
export function resourceTemplate(definition: ResourceTemplateDefinition): McpResourceTemplate {
  const parsed = parseTemplate(definition);
  const listing: ResourceTemplateListing = { uriTemplate: parsed.uriTemplate, name: parsed.name };
  if (parsed.title !== undefined) listing.title = parsed.title;
  if (parsed.description !== undefined) listing.description = parsed.description;
  if (parsed.mimeType !== undefined) listing.mimeType = parsed.mimeType;
  return {
    kind: 'resourceTemplate',
    uriTemplate: parsed.uriTemplate,
    name: parsed.name,
    deadlineMs: parsed.deadlineMs,
    mimeType: parsed.mimeType,
    scopes: parsed.scopes,
    cacheHint: parsed.cacheHint,
    template: parseUriTemplate(parsed.uriTemplate),
    listing,
    read: parsed.read,
    list: parsed.list,
    complete: parsed.complete ?? {},
  };
}

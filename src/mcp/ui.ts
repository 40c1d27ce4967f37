/**
 * UI resources (MCP Apps, SEP-1865; the OpenAI Apps SDK's component templates): one HTML document a host
 * renders in a sandboxed iframe for a tool's results. {@link uiResource} serves it in both forms, as two
 * resources with their own URIs, because a resource has one MIME type and each form wants its own:
 * - MCP Apps: `uri` (`ui://…`), `text/html;profile=mcp-app`, `_meta.ui` (`csp`, `prefersBorder`, `domain`);
 * - Apps SDK (ChatGPT): `appsSdkUri`, `text/html+skybridge`, `_meta["openai/widgetCSP"]`,
 *   `openai/widgetPrefersBorder`, `openai/widgetDescription`, `openai/widgetDomain`.
 * A tool names the pair with its `ui` option; its listing then carries both forms' keys (see `ui-meta.ts`).
 */
import { defineOptions, invalidOption, o } from '../core/index.js';
import { resource, type McpResource, type ReadContext } from './resource.js';
import { TOOL_DEADLINE_DEFAULT_MS, TOOL_DEADLINE_MAX_MS, type McpTool, type SyncTool } from './tool.js';
import { APPS_SDK_MIME_TYPE, isUiUri, MCP_APP_MIME_TYPE, type UiResource } from './ui-meta.js';

/**
 * The origins a UI may reach (SEP-1865 `McpUiResourceCsp`). Each is an origin such as
 * `https://api.example.com` (`https://*.example.com` for subdomains). Left out or empty: none, the host's
 * restrictive default (no network, inline scripts and styles only), which a self-contained page needs.
 */
export interface UiCsp {
  /** fetch, XHR, WebSocket (`connect-src`). */
  connectDomains?: string[];
  /** Scripts, styles, images, fonts, media (`script-src`, `style-src`, `img-src`, …). */
  resourceDomains?: string[];
  /** Nested iframes (`frame-src`). */
  frameDomains?: string[];
  /** `base-uri`. */
  baseUriDomains?: string[];
}

/** The definition of {@link uiResource}. */
export interface UiResourceDefinition {
  /** The MCP Apps form's URI: `ui://` and a path, e.g. `ui://giftgenius/analysis.html`. */
  uri: string;
  /**
   * The Apps SDK form's URI (`ui://…`, not `uri`). Default: `uri` with `.skybridge` put before a final
   * `.html` (`ui://giftgenius/analysis.skybridge.html`), else appended.
   */
  appsSdkUri?: string;
  /** Its name (non-empty), shown in `resources/list`. */
  name: string;
  title?: string;
  /** What the UI shows; also the Apps SDK's `openai/widgetDescription`. */
  description?: string;
  /**
   * The whole HTML5 document (scripts and styles inline), or a function that gives it at each read, under
   * the read's deadline (cache an expensive build yourself).
   */
  html: string | ((ctx: ReadContext) => string | Promise<string>);
  /** The origins the page reaches (default none: see {@link UiCsp}). */
  csp?: UiCsp;
  /** Asks the host for a visible border and background (`true`) or none (`false`); default: the host decides. */
  prefersBorder?: boolean;
  /** MCP Apps `_meta.ui.domain`: a dedicated sandbox origin, in the host's own format. Default none. */
  domain?: string;
  /** The Apps SDK's `openai/widgetDomain` (ChatGPT's format). Default none. */
  appsSdkDomain?: string;
  /** Each read's budget in ms: integer in [1, 30 000], default 10 000. */
  deadlineMs?: number;
}

const domains = o.custom<string[] | undefined>(
  (v) => v === undefined || (Array.isArray(v) && v.every((d) => typeof d === 'string' && d !== '')),
  'an array of origins (non-empty strings)',
);

const uiUri = o
  .string()
  .min(1)
  .refine((uri) => isUiUri(uri), 'a ui:// URI without spaces');

const parseUiResource = defineOptions<UiResourceDefinition>()(
  'uiResource',
  {
    uri: uiUri,
    appsSdkUri: uiUri.optional(),
    name: o.string().min(1),
    title: o.string().min(1).optional(),
    description: o.string().min(1).optional(),
    html: o.custom<UiResourceDefinition['html']>(
      (v) => (typeof v === 'string' && v !== '') || typeof v === 'function',
      'a non-empty HTML string or a function giving one',
    ),
    csp: o
      .object({
        connectDomains: domains,
        resourceDomains: domains,
        frameDomains: domains,
        baseUriDomains: domains,
      })
      .optional(),
    prefersBorder: o.boolean().optional(),
    domain: o.string().min(1).optional(),
    appsSdkDomain: o.string().min(1).optional(),
    deadlineMs: o.number().int().min(1).max(TOOL_DEADLINE_MAX_MS).default(TOOL_DEADLINE_DEFAULT_MS),
  },
  (parsed, report) => {
    if (parsed.appsSdkUri !== undefined && parsed.appsSdkUri === parsed.uri)
      report('appsSdkUri', 'a URI other than uri (each form is its own resource)', parsed.appsSdkUri);
  },
);

/**
 * Defines a UI in both forms (see the file comment): give it to a tool's `ui` option and the MCP server
 * serves its two resources with the tool (`resources/list`, `resources/read`, both eras). Both forms read
 * the same HTML; a page that runs in both hosts uses the MCP Apps bridge (`ui/*` over `postMessage`) and
 * `window.openai` when ChatGPT provides it. Whoever may call `/mcp` lists and reads both, like any resource:
 * the page must hold no one's data (it gets data from the tool results and calls the host makes for its
 * user, under that user's ownership).
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `uiResource`) naming every bad option: a URI
 *   that is not `ui://…`, an `appsSdkUri` equal to `uri`, an empty name, title, description or domain, an
 *   `html` that is neither a non-empty string nor a function, a CSP list that is not an array of non-empty
 *   strings, a `deadlineMs` not an integer in [1, 30 000].
 */
export function uiResource(definition: UiResourceDefinition): UiResource {
  const parsed = parseUiResource(definition);
  const { uri, name, title, description, html, deadlineMs } = parsed;
  const appsSdkUri = parsed.appsSdkUri ?? skybridgeUri(uri);
  const csp: UiCsp = parsed.csp ?? {};
  const read = typeof html === 'string' ? () => html : html;

  const ui: Record<string, unknown> = {};
  const given = Object.entries(csp).filter(([, list]) => Array.isArray(list) && list.length > 0);
  if (given.length > 0) ui['csp'] = Object.fromEntries(given);
  if (parsed.prefersBorder !== undefined) ui['prefersBorder'] = parsed.prefersBorder;
  if (parsed.domain !== undefined) ui['domain'] = parsed.domain;

  // ChatGPT asks every component for a CSP; empty lists are the same "nothing" as MCP Apps' default.
  const widgetCsp: Record<string, string[]> = {
    connect_domains: csp.connectDomains ?? [],
    resource_domains: csp.resourceDomains ?? [],
  };
  if (csp.frameDomains !== undefined) widgetCsp['frame_domains'] = csp.frameDomains;
  const openai: Record<string, unknown> = { 'openai/widgetCSP': widgetCsp };
  if (parsed.prefersBorder !== undefined) openai['openai/widgetPrefersBorder'] = parsed.prefersBorder;
  if (description !== undefined) openai['openai/widgetDescription'] = description;
  if (parsed.appsSdkDomain !== undefined) openai['openai/widgetDomain'] = parsed.appsSdkDomain;

  const common = { name, title, description, deadlineMs, read };
  return {
    kind: 'ui',
    uri,
    appsSdkUri,
    resources: [
      resource({
        ...common,
        uri,
        mimeType: MCP_APP_MIME_TYPE,
        meta: Object.keys(ui).length > 0 ? { ui } : undefined,
      }),
      resource({
        ...common,
        uri: appsSdkUri,
        name: `${name}-apps-sdk`,
        mimeType: APPS_SDK_MIME_TYPE,
        meta: openai,
      }),
    ],
  };
}

/** `ui://a/b.html` → `ui://a/b.skybridge.html`; `ui://a/b` → `ui://a/b.skybridge`. */
function skybridgeUri(uri: string): string {
  return uri.endsWith('.html') ? `${uri.slice(0, -'.html'.length)}.skybridge.html` : `${uri}.skybridge`;
}

/** `tool`, listed with `openai/widgetAccessible: true` (callable from an Apps SDK component). */
export function widgetAccessible(tool: SyncTool): SyncTool {
  return {
    ...tool,
    listing: { ...tool.listing, _meta: { ...tool.listing._meta, 'openai/widgetAccessible': true } },
  };
}

/**
 * The app's resources and those of its tools' `uiResource`s (one UI may serve several tools).
 * @throws OptionsError naming `owner` and `tools` when a UI resource's URI is taken by another resource.
 */
export function withUiResources(
  owner: string,
  resources: readonly McpResource[],
  tools: readonly McpTool[],
): McpResource[] {
  const byUri = new Map(resources.map((item) => [item.uri, item]));
  for (const tool of tools) {
    if (tool.ui === undefined || !('kind' in tool.ui)) continue;
    for (const item of tool.ui.resources) {
      const taken = byUri.get(item.uri);
      if (taken === undefined) byUri.set(item.uri, item);
      else if (taken !== item)
        throw invalidOption(owner, 'tools', `UI resources whose URIs no other resource has`, item.uri);
    }
  }
  return [...byUri.values()];
}

/**
 * What a tool's `ui` option names, and the `_meta` it puts on the tool's listing (MCP Apps, SEP-1865
 * "Resource Discovery"; OpenAI Apps SDK, "Tool descriptor parameters"). No runtime import of `tool.ts` or
 * `resource.ts` here: `tool.ts` needs this file while those two load.
 */
import type { McpResource } from './resource.js';

/** The MCP Apps MIME type of a UI resource (SEP-1865: a UI resource's `mimeType` MUST be this). */
export const MCP_APP_MIME_TYPE = 'text/html;profile=mcp-app';
/** The OpenAI Apps SDK's MIME type of a component template (`_meta["openai/outputTemplate"]` names one). */
export const APPS_SDK_MIME_TYPE = 'text/html+skybridge';

/** A UI resource in both forms, made by `uiResource`; a tool names it with its `ui` option. */
export interface UiResource {
  readonly kind: 'ui';
  /** The MCP Apps form's URI (`ui://…`, MIME type {@link MCP_APP_MIME_TYPE}). */
  readonly uri: string;
  /** The Apps SDK form's URI (MIME type {@link APPS_SDK_MIME_TYPE}): same HTML, its own metadata. */
  readonly appsSdkUri: string;
  /** The two resources, MCP Apps form first; the server serves them with the tool. */
  readonly resources: readonly McpResource[];
}

/**
 * A tool's `ui` option: a {@link UiResource} (both forms, served by the server with the tool), or
 * `{ resourceUri }` naming a `ui://` resource the app serves itself (then only the MCP Apps form is named).
 */
export type ToolUi = UiResource | { resourceUri: string };

/** True for a value a tool's `ui` option accepts. */
export function isToolUi(value: unknown): value is ToolUi {
  if (typeof value !== 'object' || value === null) return false;
  const ui = value as Record<string, unknown>;
  if (ui['kind'] === 'ui') return Array.isArray(ui['resources']) && typeof ui['appsSdkUri'] === 'string';
  return typeof ui['resourceUri'] === 'string' && isUiUri(ui['resourceUri']);
}

/** A `ui://` URI with something after the scheme (SEP-1865: UI resource URIs MUST use `ui://`). */
export function isUiUri(uri: string): boolean {
  return /^ui:\/\/\S+$/.test(uri);
}

/**
 * The listing `_meta` of a tool with a UI:
 * - MCP Apps: `ui.resourceUri`, and the flat `ui/resourceUri` the ext-apps SDK's `registerAppTool` still
 *   writes for hosts that read only it (deprecated by SEP-1865, kept while hosts read it);
 * - Apps SDK (a {@link UiResource} only): `openai/outputTemplate` (its {@link APPS_SDK_MIME_TYPE} twin) and
 *   `openai/widgetAccessible: true`, so the component may call tools through `window.openai.callTool`.
 */
export function uiToolMeta(ui: ToolUi): Record<string, unknown> {
  const resourceUri = 'kind' in ui ? ui.uri : ui.resourceUri;
  const meta: Record<string, unknown> = { ui: { resourceUri }, 'ui/resourceUri': resourceUri };
  if ('kind' in ui) {
    meta['openai/outputTemplate'] = ui.appsSdkUri;
    meta['openai/widgetAccessible'] = true;
  }
  return meta;
}

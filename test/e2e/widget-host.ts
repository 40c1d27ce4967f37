/// <reference lib="dom" />
/**
 * A tiny MCP Apps host for the widget test (bundled by esbuild, run in Chromium; not a test file): the
 * ext-apps `AppBridge` on the host side of a sandboxed iframe, its tool calls handed to the test's real MCP
 * client through `window.hostCallTool` (a Playwright binding). The widget page gets the restrictive CSP that
 * SEP-1865 makes a host apply when a UI declares no origins.
 */
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

type Json = Record<string, unknown>;
type CallToolResult = Parameters<AppBridge['sendToolResult']>[0];

/** SEP-1865, "Host Behavior": the CSP of a UI resource without `ui.csp`. */
const DEFAULT_CSP =
  "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; " +
  "img-src 'self' data:; media-src 'self' data:; connect-src 'none'";

interface TestWindow {
  hostCallTool(params: Json): Promise<CallToolResult>;
  startHost(html: string): Promise<void>;
  host: { toolInput(args: Json): Promise<void>; toolResult(result: CallToolResult): Promise<void> };
}

const w = window as unknown as TestWindow;

w.startHost = async (html) => {
  const iframe = document.createElement('iframe');
  iframe.id = 'widget';
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.style.cssText = 'width: 480px; height: 560px; border: 1px solid #ccc;';
  document.body.append(iframe);
  const bridge = new AppBridge(null, { name: 'breakwater-test-host', version: '1.0.0' }, { serverTools: {} });
  bridge.oncalltool = (params) => w.hostCallTool(params as unknown as Json);
  const initialized = new Promise<void>((resolve) => (bridge.oninitialized = () => resolve()));
  const view = iframe.contentWindow!;
  await bridge.connect(new PostMessageTransport(view, view));
  iframe.srcdoc = html.replace(
    '<head>',
    `<head><meta http-equiv="Content-Security-Policy" content="${DEFAULT_CSP}">`,
  );
  await initialized;
  w.host = {
    toolInput: (args) => bridge.sendToolInput({ arguments: args }),
    toolResult: (result) => bridge.sendToolResult(result),
  };
};

/**
 * The GiftGenius analysis widget as a UI resource of `start_deep_analysis` (docs/giftgenius.md#the-widget):
 * served as `ui://giftgenius/analysis.html` (MCP Apps) and `ui://giftgenius/analysis.skybridge.html`
 * (ChatGPT's Apps SDK). The page is built at its first read (see `build.ts`) and kept for the process.
 */
import { uiResource, type UiResource } from '../../../src/entries/mcp.js';
import { widgetHtml } from './build.js';

/** The widget's MCP Apps URI. */
export const ANALYSIS_WIDGET_URI = 'ui://giftgenius/analysis.html';

/** The widget (one object: the tool that names it gets its two resources served). */
export const analysisWidget: UiResource = uiResource({
  uri: ANALYSIS_WIDGET_URI,
  name: 'analysis-widget',
  title: 'Deep gift analysis',
  description:
    'Follows a deep gift analysis: its steps, three draft gifts, the final list, and a Cancel button.',
  html: () => widgetHtml(),
  prefersBorder: true,
});

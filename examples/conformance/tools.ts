/**
 * The suite's tool fixtures whose results are text: `test_simple_text`, `test_error_handling`,
 * `test_tool_with_progress` and `test_reconnection` (names, arguments and results as
 * `@modelcontextprotocol/conformance` expects them in its `tools-call-*` and `server-sse-polling` scenarios).
 * Written with the public API only, like any app's tools.
 */
import { BreakwaterError } from '../../src/entries/index.js';
import { resilientTool, type McpTool } from '../../src/entries/mcp.js';
import { wait } from './wait.js';

/** The text `test_simple_text` answers. */
export const SIMPLE_TEXT = 'This is a simple text response for testing.';
/** The message of the failure `test_error_handling` answers. */
export const ERROR_TEXT = 'This tool intentionally returns an error for testing';
/** The text `test_reconnection` answers once its client has reconnected. */
export const RECONNECTED_TEXT = 'Reconnected: the result arrived on the resumed stream.';
/** Ms between two progress steps of `test_tool_with_progress` (the suite asks for about 50). */
export const PROGRESS_STEP_MS = 50;

/** The text tool fixtures, in the order `tools/list` shows them. */
export function textTools(): McpTool[] {
  return [
    resilientTool({
      name: 'test_simple_text',
      description: 'Answers a fixed sentence as text (conformance fixture).',
      inputSchema: {},
      annotations: { readOnlyHint: true },
      handler: () => ({ text: SIMPLE_TEXT }),
      toText: (result) => result.text,
    }),
    resilientTool({
      name: 'test_error_handling',
      description: 'Always fails, so the answer is a tool result with isError: true (conformance fixture).',
      inputSchema: {},
      annotations: { readOnlyHint: true },
      handler: () => {
        // A Breakwater error keeps its message in the result; any other error gets the generic sentence.
        throw new BreakwaterError('handler_failed', { message: ERROR_TEXT });
      },
    }),
    resilientTool({
      name: 'test_tool_with_progress',
      description: 'Reports progress 0, 50 and 100 of 100, about 50 ms apart (conformance fixture).',
      inputSchema: {},
      annotations: { readOnlyHint: true },
      handler: async (_args, ctx) => {
        await ctx.progress(0, 100);
        await wait(PROGRESS_STEP_MS, ctx.signal);
        await ctx.progress(50, 100);
        await wait(PROGRESS_STEP_MS, ctx.signal);
        await ctx.progress(100, 100);
        return { steps: 3 };
      },
      toText: () => 'Progress reported: 0, 50 and 100 of 100.',
    }),
    resilientTool({
      name: 'test_reconnection',
      description:
        'Ends its response stream mid-call, then answers: the client gets the result after it reconnects (conformance fixture).',
      inputSchema: {},
      annotations: { readOnlyHint: true },
      handler: async (_args, ctx) => {
        await wait(PROGRESS_STEP_MS, ctx.signal);
        ctx.closeStream();
        await wait(PROGRESS_STEP_MS, ctx.signal);
        return { text: RECONNECTED_TEXT };
      },
      toText: (result) => result.text,
    }),
  ];
}

/**
 * The suite's fixtures of multi-round-trip requests (its `input-required-result-*` scenarios, MCP
 * 2026-07-28): tools and a prompt that ask the user with `ctx.requestInput` / `ctx.requestInputs`, under the
 * keys, messages and schemas the suite names. Public API only: the gateway turns an unanswered question into
 * an `input_required` result with a signed `requestState`, and runs the handler again with the answers.
 */
import {
  prompt,
  resilientTool,
  type InputSchema,
  type McpPrompt,
  type McpTool,
} from '../../src/entries/mcp.js';

const NAME_SCHEMA: InputSchema = {
  type: 'object',
  properties: { name: { type: 'string' } },
  required: ['name'],
};
const CONFIRM_SCHEMA: InputSchema = {
  type: 'object',
  properties: { confirm: { type: 'boolean' } },
  required: ['confirm'],
};
const GREETING = {
  messages: [{ role: 'user' as const, content: { type: 'text', text: 'Generate a greeting' } }],
  maxTokens: 50,
};

const text = (value: string) => ({ text: value });
const toText = (result: { text: string }) => result.text;

/** The tool fixtures, in the order `tools/list` shows them. */
export function inputTools(): McpTool[] {
  return [
    resilientTool({
      name: 'test_input_required_result_elicitation',
      description: 'Asks the user for their name, then greets them (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        const answer = await ctx.requestInput({
          key: 'user_name',
          message: 'What is your name?',
          schema: NAME_SCHEMA,
        });
        return text(`Hello, ${String(answer.content?.['name'] ?? 'stranger')}!`);
      },
      toText,
    }),
    resilientTool({
      name: 'test_input_required_result_sampling',
      description: 'Asks the client’s model a question and answers its reply (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        const { capital_question } = await ctx.requestInputs({
          capital_question: {
            sampling: {
              messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
              maxTokens: 100,
            },
          },
        });
        const content = capital_question.content as { type?: string; text?: string };
        return text(`The model said: ${content.type === 'text' ? String(content.text) : '(no text)'}`);
      },
      toText,
    }),
    resilientTool({
      name: 'test_input_required_result_list_roots',
      description: 'Asks the client for its roots and lists them (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        const { client_roots } = await ctx.requestInputs({ client_roots: { roots: true } });
        return text(`Roots: ${client_roots.roots.map((root) => root.uri).join(', ')}`);
      },
      toText,
    }),
    resilientTool({
      name: 'test_input_required_result_request_state',
      description:
        'Asks for a confirmation; the answer comes back with the signed state (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        const answer = await ctx.requestInput({
          key: 'confirm',
          message: 'Please confirm',
          schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        });
        // The gateway refuses a requestState that fails its signature, binding or expiry (-32602).
        return text(`state-ok: confirmed=${String(answer.content?.['ok'] === true)}`);
      },
      toText,
    }),
    resilientTool({
      name: 'test_input_required_result_multiple_inputs',
      description: 'Asks for a name, a greeting and the roots in one round (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        const answers = await ctx.requestInputs({
          user_name: { message: 'What is your name?', schema: NAME_SCHEMA },
          greeting: { sampling: GREETING },
          client_roots: { roots: true },
        });
        const name = String(answers.user_name.content?.['name'] ?? 'stranger');
        return text(`Hello, ${name}: ${answers.client_roots.roots.length} root(s).`);
      },
      toText,
    }),
    resilientTool({
      name: 'test_input_required_result_multi_round',
      description: 'Asks for a name, then for a colour, in two rounds (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        const step1 = await ctx.requestInput({
          key: 'step1',
          message: 'Step 1: What is your name?',
          schema: NAME_SCHEMA,
        });
        const step2 = await ctx.requestInput({
          key: 'step2',
          message: 'Step 2: What is your favorite color?',
          schema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
        });
        return text(`${String(step1.content?.['name'])} likes ${String(step2.content?.['color'])}.`);
      },
      toText,
    }),
    resilientTool({
      name: 'test_input_required_result_tampered_state',
      description: 'Asks for a confirmation; a changed requestState is refused (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        await ctx.requestInput({
          key: 'confirm',
          message: 'Please confirm',
          schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        });
        return text('confirmed');
      },
      toText,
    }),
    resilientTool({
      name: 'test_input_required_result_capabilities',
      description: 'Asks only what the client declared it can answer (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        const support = ctx.inputSupport;
        const asks: Record<string, { message: string } | { sampling: typeof GREETING }> = {};
        if (support.elicitation) asks['user_name'] = { message: 'What is your name?' };
        if (support.sampling) asks['greeting'] = { sampling: GREETING };
        if (Object.keys(asks).length === 0) return text('nothing to ask this client');
        await ctx.requestInputs(asks);
        return text(`asked: ${Object.keys(asks).join(', ')}`);
      },
      toText,
    }),
    resilientTool({
      name: 'test_missing_capability',
      description:
        'Needs the client’s model: refused with -32021 when the request does not declare sampling (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        const { reply } = await ctx.requestInputs({ reply: { sampling: GREETING } });
        const content = reply.content as { type?: string; text?: string };
        return text(content.type === 'text' ? String(content.text) : '(no text)');
      },
      toText,
    }),
    resilientTool({
      name: 'test_streaming_elicitation',
      description:
        'Reports progress, then asks a question: the stream carries notifications and the input_required result, never a request (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        await ctx.progress(0, 2);
        await ctx.progress(1, 2);
        const answer = await ctx.requestInput({ key: 'go_on', message: 'Go on?', schema: CONFIRM_SCHEMA });
        return text(answer.action === 'accept' ? 'went on' : 'stopped');
      },
      toText,
    }),
  ];
}

/** The prompt fixture of `input-required-result-non-tool-request`. */
export function inputPrompts(): McpPrompt[] {
  return [
    prompt({
      name: 'test_input_required_result_prompt',
      description: 'Asks for context before building the prompt (conformance fixture).',
      arguments: {},
      get: async (_args: Record<string, never>, ctx) => {
        const answer = await ctx.requestInput({
          key: 'context',
          message: 'What context should the prompt use?',
          schema: {
            type: 'object',
            properties: { context: { type: 'string' } },
            required: ['context'],
          },
        });
        return [
          {
            role: 'user',
            content: { type: 'text', text: `Context: ${String(answer.content?.['context'])}` },
          },
        ];
      },
    }),
  ];
}

/**
 * The suite's fixtures of server-to-client requests during a call on the 2025 revisions (its
 * `tools-call-sampling`, `tools-call-elicitation`, `elicitation-sep1034-defaults` and
 * `elicitation-sep1330-enums` scenarios): tools that ask with `ctx.requestInput` / `ctx.requestInputs`, which a
 * session turns into real `sampling/createMessage` and `elicitation/create` requests while the call waits.
 * Names, arguments, schemas and result texts as the suite gives them. Public API only.
 */
import { z } from 'zod';
import { resilientTool, type InputSchema, type McpTool } from '../../src/entries/mcp.js';

const toText = (result: { text: string }) => result.text;

/** SEP-1034: a default on every primitive type. */
const DEFAULTS_SCHEMA: InputSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', default: 'John Doe' },
    age: { type: 'integer', default: 30 },
    score: { type: 'number', default: 95.5 },
    status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean', default: true },
  },
};

/** SEP-1330: the five enum variants. */
const ENUMS_SCHEMA: InputSchema = {
  type: 'object',
  properties: {
    untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    titledSingle: {
      type: 'string',
      oneOf: [
        { const: 'value1', title: 'First Option' },
        { const: 'value2', title: 'Second Option' },
        { const: 'value3', title: 'Third Option' },
      ],
    },
    legacyEnum: {
      type: 'string',
      enum: ['opt1', 'opt2', 'opt3'],
      enumNames: ['Option One', 'Option Two', 'Option Three'],
    },
    untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
    titledMulti: {
      type: 'array',
      items: {
        anyOf: [
          { const: 'value1', title: 'First Choice' },
          { const: 'value2', title: 'Second Choice' },
          { const: 'value3', title: 'Third Choice' },
        ],
      },
    },
  },
};

/** The tool fixtures, in the order `tools/list` shows them. */
export function elicitationTools(): McpTool[] {
  return [
    resilientTool({
      name: 'test_sampling',
      description: 'Asks the client’s model to answer a prompt (conformance fixture).',
      inputSchema: { prompt: z.string() },
      handler: async ({ prompt }, ctx) => {
        const { reply } = await ctx.requestInputs({
          reply: {
            sampling: {
              messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
              maxTokens: 100,
            },
          },
        });
        const content = reply.content as { type?: string; text?: string };
        return { text: `LLM response: ${content.type === 'text' ? String(content.text) : '(no text)'}` };
      },
      toText,
    }),
    resilientTool({
      name: 'test_elicitation',
      description: 'Asks the user for a name and an email (conformance fixture).',
      inputSchema: { message: z.string() },
      handler: async ({ message }, ctx) => {
        const answer = await ctx.requestInput({
          message,
          schema: {
            type: 'object',
            properties: {
              username: { type: 'string', description: 'User’s response' },
              email: { type: 'string', description: 'User’s email address' },
            },
            required: ['username', 'email'],
          },
        });
        return { text: `User response: ${JSON.stringify(answer)}` };
      },
      toText,
    }),
    resilientTool({
      name: 'test_elicitation_sep1034_defaults',
      description: 'Asks a form whose fields have defaults (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        const answer = await ctx.requestInput({ message: 'Check the defaults', schema: DEFAULTS_SCHEMA });
        return {
          text: `Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`,
        };
      },
      toText,
    }),
    resilientTool({
      name: 'test_elicitation_sep1330_enums',
      description: 'Asks a form with every kind of enum (conformance fixture).',
      inputSchema: {},
      handler: async (_args, ctx) => {
        const answer = await ctx.requestInput({ message: 'Pick options', schema: ENUMS_SCHEMA });
        return {
          text: `Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`,
        };
      },
      toText,
    }),
  ];
}

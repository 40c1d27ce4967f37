/**
 * The suite's diagnostic tool fixtures: logging during a call (`tools-call-with-logging` on 2025-11-25;
 * `server-stateless` checks that 2026-07-28 sends none without a requested level), an input schema of JSON
 * Schema 2020-12 listed as given (`json-schema-2020-12`), and a parameter mirrored in an `Mcp-Param-*`
 * header (`http-custom-header-server-validation`). Written with the public API only.
 */
import { z } from 'zod';
import { jsonSchemaInput, resilientTool, type McpTool } from '../../src/entries/mcp.js';
import { wait } from './wait.js';

/** Ms between two log messages of `test_tool_with_logging` (the suite asks for about 50). */
export const LOG_STEP_MS = 50;

/** The input schema `json-schema-2020-12` expects of `json_schema_2020_12_tool`, keyword for keyword. */
export const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

export function diagnosticTools(): McpTool[] {
  return [
    resilientTool({
      name: 'test_tool_with_logging',
      description: 'Sends three info log messages about 50 ms apart (conformance fixture).',
      inputSchema: {},
      annotations: { readOnlyHint: true },
      handler: async (_args, ctx) => {
        ctx.log('info', 'Tool execution started');
        await wait(LOG_STEP_MS, ctx.signal);
        ctx.log('info', 'Tool processing data');
        await wait(LOG_STEP_MS, ctx.signal);
        ctx.log('info', 'Tool execution completed');
        return { text: 'Tool with logging executed successfully' };
      },
      toText: (result) => result.text,
    }),
    resilientTool({
      name: 'test_logging_tool',
      description:
        'Logs one info message: sent only when the request asked for that level (conformance fixture).',
      inputSchema: {},
      annotations: { readOnlyHint: true },
      handler: (_args, ctx) => {
        ctx.log('info', 'Logging tool called');
        return { text: 'logged' };
      },
      toText: (result) => result.text,
    }),
    resilientTool({
      name: 'json_schema_2020_12_tool',
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: jsonSchemaInput(JSON_SCHEMA_2020_12),
      annotations: { readOnlyHint: true },
      handler: (args) => ({ received: args }),
    }),
    resilientTool({
      name: 'test_custom_header',
      description:
        'Echoes its region, which the client also sends as the Mcp-Param-Region header (conformance fixture).',
      inputSchema: { region: z.string().meta({ 'x-mcp-header': 'Region' }) },
      annotations: { readOnlyHint: true },
      handler: ({ region }) => ({ region }),
    }),
  ];
}

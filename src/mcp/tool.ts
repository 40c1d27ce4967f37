import { z } from 'zod';
import { defineOptions, o, Schema, type OptionProblem, type Parsed } from '../core/index.js';
import { requiredScopesFor } from '../http/index.js';
import type { EnqueueOptions } from '../jobs/index.js';
import type { InputContext } from './input.js';
import { jsonSchemaChecker } from './sdk-v2.js';
import type { ContentBlock, ToolAnnotations, ToolListing } from './types.js';
import { isToolUi, uiToolMeta, type ToolUi } from './ui-meta.js';

/** Tool deadlines (docs/architecture.md#deadlines): 10 s by default, 30 s at most (heavy tools). */
export const TOOL_DEADLINE_DEFAULT_MS = 10_000;
export const TOOL_DEADLINE_MAX_MS = 30_000;

/** MCP tool names (spec 2025-11-25, "Tools"): 1 to 128 of A-Z, a-z, 0-9, `_`, `-` and `.`. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** A tool's arguments: a zod object schema, or its shape (`{ recipient: z.string() }`). */
export type ToolInput = z.ZodRawShape | z.ZodType<Record<string, unknown>>;

/** The parsed arguments of a {@link ToolInput}. */
export type ToolArgs<I extends ToolInput> = I extends z.ZodType
  ? z.output<I>
  : I extends z.ZodRawShape
    ? z.output<z.ZodObject<I>>
    : never;

/**
 * What a tool handler gets besides its arguments; `requestInput`/`requestInputs` ask the user during the call
 * (see {@link InputContext} and docs/mcp.md#asking-the-user-during-a-call).
 */
export interface ToolContext extends InputContext {
  /**
   * Aborts at the tool's deadline (reason: BreakwaterError `deadline_exceeded`) or when the client cancels the
   * call (`notifications/cancelled`). Pass it to every I/O call.
   */
  signal: AbortSignal;
  /** The absolute deadline, ms since the epoch on the server's clock (also set in core's `Deadline`). */
  deadline: number;
  /** The caller's `X-Correlation-ID` header when it sent a usable one, else a new id. */
  correlationId: string;
  /**
   * Reports progress as `notifications/progress` when the caller sent a `progressToken` (else does nothing).
   * `progress` must grow with every call (MCP: progress MUST increase); a value that does not, or is not a
   * finite number, is dropped. Never rejects.
   */
  progress(progress: number, total?: number, message?: string): Promise<void>;
  /**
   * Names the side-effecting operation this call runs, once it is persisted (the operation ledger's
   * `onOperation`): an answer cut off by the deadline or a cancel then carries its `operation_id` and lookup
   * (`reconcile`) with outcome `unknown`, so the caller resumes it instead of starting a second one.
   */
  operation(operationId: string, reconcile?: { method: string; path: string } | null): void;
  /**
   * Sends a log message to the caller as `notifications/message` (MCP "Logging"): `level` one of `debug`,
   * `info`, `notice`, `warning`, `error`, `critical`, `alert`, `emergency`; `data` any JSON value (one over
   * 16 KiB as JSON is cut to a string of that size). Sent only when the client asked for that level or a
   * lower one: `logging/setLevel` on a 2025 session, the request's `_meta` log level on 2026-07-28
   * (none asked: nothing is sent). At most 100 messages per call; never blocks or throws, and does nothing
   * once the call answered.
   */
  log(level: LogLevel, data: unknown): void;
  /**
   * Ends the call's response stream before the answer, for a client that polls (MCP 2025-11-25, SEP-1699):
   * the client reconnects after the stream's `retry` hint (1 s) and receives the progress, logs and result sent
   * meanwhile from the gateway's event store. Use it in a long call behind proxies that cut idle or long
   * streams. Does nothing where the answer cannot be resumed (2026-07-28, a session without an event store,
   * a JSON answer) and once the call answered; never throws.
   */
  closeStream(): void;
}

/** The MCP log levels (RFC 5424 severities), least severe first. */
export const LOG_LEVELS = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
] as const;

/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

interface ToolBase {
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  /** The arguments' schema, as an object schema. */
  readonly schema: z.ZodType;
  /** The whole call's budget in ms (1..30 000). */
  readonly deadlineMs: number;
  readonly annotations?: ToolAnnotations;
  /** Scopes a caller must hold besides `mcp` (see `ToolBaseDefinition.scopes`); empty for none. */
  readonly scopes: readonly string[];
  /** The UI the tool's results are shown with (see `ToolBaseDefinition.ui`). */
  readonly ui?: ToolUi;
  /** What `tools/list` shows. */
  readonly listing: ToolListing;
}

/** A tool that answers within its deadline (made by {@link resilientTool}). */
export interface SyncTool extends ToolBase {
  readonly kind: 'sync';
  readonly handler: (args: never, ctx: ToolContext) => unknown;
  readonly toText?: (result: never) => string;
  readonly toContent?: (result: never) => readonly ContentBlock[];
}

/** A tool that starts a job and answers with its handle, or waits for it (made by `jobTool`). */
export interface JobTool extends ToolBase {
  readonly kind: 'job';
  readonly jobType: string;
  readonly toPayload: (args: never, ctx: InputContext) => unknown;
  readonly enqueueOptions?: EnqueueOptions | ((args: never) => EnqueueOptions);
  readonly toResult?: (result: never) => unknown;
  readonly toText?: (result: never) => string;
  /** Whether a call must be a task (see `jobTool`'s `taskSupport`). */
  readonly taskSupport: 'optional' | 'required';
}

/** Any tool `createMcpServer` serves. */
export type McpTool = SyncTool | JobTool;

/** The definition of {@link resilientTool}. */
export interface ResilientToolDefinition<I extends ToolInput, R = unknown> {
  /** MCP tool name: 1..128 of `A-Za-z0-9_.-`. */
  name: string;
  title?: string;
  /** What the tool does, for the model. Non-empty. */
  description: string;
  inputSchema: I;
  /** The call's whole budget in ms: integer in [1, 30 000], default 10 000. */
  deadlineMs?: number;
  /**
   * MCP annotations. `readOnlyHint: true` also tells Breakwater that a call cut off by its deadline changed
   * nothing (outcome `failed`); any other tool's cut-off call has outcome `unknown` (it may have taken
   * effect), and is retryable only with `idempotentHint: true`.
   */
  annotations?: ToolAnnotations;
  /** Scopes a caller must hold besides `mcp` (see {@link ToolBaseDefinition.scopes}). Default none. */
  scopes?: readonly string[];
  /** The UI a host shows the tool's results with (see {@link ToolBaseDefinition.ui}). Default none. */
  ui?: ToolUi;
  /** Does the work; its resolved value becomes the result (see {@link ToolContext}). */
  handler(args: ToolArgs<I>, ctx: ToolContext): R | Promise<R>;
  /** The text the model reads for a success (default: the value as JSON). */
  toText?(result: R): string;
  /**
   * The content blocks of a success instead of the one text block (`toText` is then not used): text, image
   * and audio (base64 `data` and a `mimeType`), an embedded resource (`text` or base64 `blob`) or a
   * resource link, as MCP 2025-11-25 "Tool Result" defines them; both eras answer them as they are. The
   * value stays the result's `structuredContent`. A malformed block (bad base64, a missing `mimeType`, an
   * empty array) is a bug of the tool: the call answers `internal_error` and the server reports it.
   */
  toContent?(result: R): readonly ContentBlock[];
}

/**
 * Defines a tool that runs under a deadline and never fails with a protocol error: whatever the handler
 * throws, and a handler still running at the deadline, become a tool result with `isError: true`, a human
 * sentence in `content` and `structuredContent.error` (see `results.ts`). The deadline does not wait for a
 * handler that ignores its signal. A success is `{ content: [{ type: 'text', text }], structuredContent }`,
 * or the blocks of `toContent`.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `resilientTool`) at definition, naming every bad
 *   option: a bad name, an empty description or title, a `deadlineMs` that is not an integer in [1, 30 000],
 *   an input schema that is not an object schema, a handler, `toText` or `toContent` that is not a function,
 *   a `ui` that is neither a `uiResource` nor `{ resourceUri: 'ui://…' }`.
 */
export function resilientTool<I extends ToolInput, R = unknown>(
  definition: ResilientToolDefinition<I, R>,
): SyncTool {
  const parsed = parseResilientTool(definition as unknown as ResilientToolDefinition<ToolInput>);
  return {
    kind: 'sync',
    ...toolBase(parsed, undefined),
    handler: parsed.handler as SyncTool['handler'],
    toText: parsed.toText as SyncTool['toText'],
    toContent: parsed.toContent as SyncTool['toContent'],
  };
}

/** The common part of every tool definition. */
export interface ToolBaseDefinition {
  name: string;
  title?: string;
  description: string;
  inputSchema: ToolInput;
  deadlineMs?: number;
  annotations?: ToolAnnotations;
  /**
   * Scopes a caller must hold, all of them, besides `mcp` (an OAuth token's own scopes, e.g.
   * `checkout:write`; `admin` holds every scope). A caller without them gets HTTP 403 with
   * `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`, so an OAuth client can ask for them.
   * Default none.
   */
  scopes?: readonly string[];
  /**
   * The UI a host renders the tool's results with (docs/mcp.md#mcp-apps): a `uiResource(...)`, whose two
   * resources (MCP Apps and Apps SDK forms) the server then serves, or `{ resourceUri: 'ui://…' }` for a
   * resource the app serves itself (MCP Apps form only). The listing's `_meta` names it: `ui.resourceUri`
   * (and the flat `ui/resourceUri`), and for a `uiResource` also `openai/outputTemplate` and
   * `openai/widgetAccessible: true`. Results are unchanged: the UI reads `structuredContent`. Default none.
   */
  ui?: ToolUi;
}

/** A zod object schema and its JSON Schema (`tools/list`), from a definition's `inputSchema`. */
interface CheckedInput {
  readonly schema: z.ZodType;
  readonly json: Record<string, unknown>;
  /** True for a {@link jsonSchemaInput}: listed exactly as given, `$schema` included. */
  readonly verbatim: boolean;
}

/** The JSON Schema of each {@link jsonSchemaInput} schema, as given. */
const VERBATIM = new WeakMap<z.ZodType, Record<string, unknown>>();

/**
 * A tool input given as JSON Schema rather than zod (MCP 2025-11-25 "Tools": input schemas are JSON Schema,
 * 2020-12 unless `$schema` names another dialect): `tools/list` shows it exactly as given (`$schema`, `$defs`,
 * `$anchor`, `allOf`/`anyOf`, `if`/`then`/`else`, `additionalProperties`, `x-mcp-header` annotations kept),
 * and a call's arguments are checked against it with the MCP SDK's JSON Schema validator (AJV); a bad call
 * is answered like a zod one (`invalid_payload` naming up to five problems). The handler gets the arguments
 * as sent.
 * @throws RangeError when `schema` is not an object, or is not of `type: "object"`; Error when the validator
 *   cannot compile it.
 */
export function jsonSchemaInput(schema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema) || schema['type'] !== 'object')
    throw new RangeError('jsonSchemaInput: a JSON Schema object of type "object"');
  const given = structuredClone(schema);
  const check = jsonSchemaChecker(given);
  const zod = z.record(z.string(), z.unknown()).superRefine(async (value, ctx) => {
    for (const problem of await check(value))
      ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
  });
  VERBATIM.set(zod, given);
  return zod;
}

/** The object schema of a {@link ToolInput}, or undefined with its problems recorded. */
function objectSchema(input: unknown, option: string, problems: OptionProblem[]): z.ZodType | undefined {
  if (isZodType(input)) return input;
  if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
    const before = problems.length;
    for (const [key, value] of Object.entries(input)) {
      if (!isZodType(value)) problems.push({ option: `${option}.${key}`, rule: 'a zod schema', value });
    }
    return problems.length === before ? z.object(input as z.ZodRawShape) : undefined;
  }
  problems.push({ option, rule: 'a zod object schema or shape', value: input });
  return undefined;
}

/** A definition's `inputSchema`: a zod object schema or shape whose JSON Schema is of type `object`. */
const inputSchemaOption = new Schema<CheckedInput, ToolInput>((input, option, problems) => {
  const schema = objectSchema(input, option, problems);
  if (schema === undefined) return undefined as never;
  const given = VERBATIM.get(schema);
  if (given !== undefined) return { schema, json: structuredClone(given), verbatim: true };
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  if (json['type'] !== 'object')
    problems.push({ option, rule: 'an object schema (JSON Schema type "object")', value: input });
  return { schema, json, verbatim: false };
});

/** The schemas of {@link ToolBaseDefinition}, shared by `resilientTool` and `jobTool`. */
export const TOOL_BASE_SHAPE = {
  name: o
    .string()
    .min(1)
    .refine((name) => TOOL_NAME.test(name), '1 to 128 of A-Z a-z 0-9 _ - .'),
  title: o.string().min(1).optional(),
  description: o.string().min(1),
  inputSchema: inputSchemaOption,
  deadlineMs: o.number().int().min(1).max(TOOL_DEADLINE_MAX_MS).default(TOOL_DEADLINE_DEFAULT_MS),
  // Passed on as given (shown in tools/list).
  annotations: o.any<ToolAnnotations | undefined>(),
  // Checked by http/'s requiredScopesFor, which names the tool.
  scopes: o.any<readonly string[] | undefined>(),
  ui: o.custom<ToolUi>(isToolUi, "a uiResource(...) or { resourceUri: 'ui://…' }").optional(),
};

/** A {@link ToolBaseDefinition} as {@link TOOL_BASE_SHAPE} parses it. */
export type ParsedToolBase = Parsed<typeof TOOL_BASE_SHAPE>;

type AnyFn = (...args: never[]) => unknown;

/** Checks a {@link ResilientToolDefinition}, every bad option at once. */
const parseResilientTool = defineOptions<ResilientToolDefinition<ToolInput>>()('resilientTool', {
  ...TOOL_BASE_SHAPE,
  handler: o.fn<AnyFn>(),
  toText: o.fn<AnyFn>().optional(),
  toContent: o.fn<AnyFn>().optional(),
});

/**
 * The common part of a tool from its parsed definition.
 * @throws RangeError naming the tool (http/'s `requiredScopesFor`) for bad `scopes`.
 */
export function toolBase(definition: ParsedToolBase, execution: ToolListing['execution']): ToolBase {
  const { name, title, description, deadlineMs, annotations } = definition;
  const { schema, json: inputSchema, verbatim } = definition.inputSchema;
  // Clients read the dialect from the spec (2020-12 by default); zod's marker only adds bytes to every list.
  if (!verbatim) delete inputSchema['$schema'];
  const listing: ToolListing = {
    name,
    description,
    inputSchema: inputSchema as ToolListing['inputSchema'],
  };
  if (title !== undefined) listing.title = title;
  if (annotations !== undefined) listing.annotations = { ...annotations };
  if (execution !== undefined) listing.execution = execution;
  if (definition.ui !== undefined) listing._meta = uiToolMeta(definition.ui);
  return {
    name,
    title,
    description,
    schema,
    deadlineMs,
    annotations,
    scopes: requiredScopesFor({ name, scopes: definition.scopes }),
    ui: definition.ui,
    listing,
  };
}

function isZodType(value: unknown): value is z.ZodType {
  return typeof value === 'object' && value !== null && '_zod' in value;
}

/**
 * Parses a call's arguments with its tool's (or prompt's) schema. Resolves with the parsed value, or with a
 * sentence naming up to five problems (`budget_usd: Invalid input: expected number, received string`).
 */
export async function parseArgs(
  tool: Pick<McpTool, 'schema'>,
  args: unknown,
): Promise<{ ok: true; value: unknown } | { ok: false; problems: string }> {
  const parsed = await tool.schema.safeParseAsync(args ?? {});
  if (parsed.success) return { ok: true, value: parsed.data };
  const problems = parsed.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'arguments'}: ${issue.message}`)
    .join('; ');
  return { ok: false, problems };
}

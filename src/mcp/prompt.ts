import { z } from 'zod';
import { defineOptions, o } from '../core/index.js';
import { scopesOption, type ResourceContents, type ReadContext } from './resource.js';
import type { Completer } from './resource-template.js';
import { TOOL_DEADLINE_DEFAULT_MS, TOOL_DEADLINE_MAX_MS } from './tool.js';

/** A prompt's arguments: a zod shape of string schemas (MCP prompt arguments are strings). */
export type PromptArguments = Record<string, z.ZodType<string | undefined>>;

/** The content of a prompt message (MCP `ContentBlock`: text, image, or an embedded resource). */
export type PromptContent =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'resource'; resource: ResourceContents };

/** One message of a `prompts/get` result. */
export interface PromptMessage {
  role: 'user' | 'assistant';
  content: PromptContent;
}

/** A `prompts/get` result. */
export interface PromptResult {
  description?: string;
  messages: PromptMessage[];
}

/** One entry of `prompts/list` (MCP `Prompt`). */
export interface PromptListing {
  name: string;
  title?: string;
  description?: string;
  arguments?: { name: string; description?: string; required: boolean }[];
}

/** The definition of {@link prompt}. */
export interface PromptDefinition<A extends PromptArguments = PromptArguments> {
  /** 1..128 of `A-Za-z0-9_.-`, unique among the prompts. */
  name: string;
  title?: string;
  description?: string;
  /**
   * The arguments as a zod shape of strings (`{ occasion: z.string().describe('…') }`); an `.optional()` one
   * is listed `required: false`. Default none.
   */
  arguments?: A;
  /** The get's (and a completion's) whole budget in ms: integer in [1, 30 000], default 10 000 (as tools). */
  deadlineMs?: number;
  /**
   * Scopes a caller must hold, all of them (`admin` holds every scope), to see the prompt: a caller without
   * them does not find it in `prompts/list` and gets "Unknown prompt" (-32602) on a get or a completion.
   * Default none.
   */
  scopes?: readonly string[];
  /**
   * Completers of its arguments, by name (each must be an argument), for `completion/complete` with a
   * `ref/prompt` reference. Default none.
   */
  complete?: { readonly [K in keyof A]?: Completer };
  /** Builds the messages, under the deadline and the caller's `PrincipalContext`. */
  get(
    args: z.output<z.ZodObject<A>>,
    ctx: ReadContext,
  ): PromptResult | PromptMessage[] | Promise<PromptResult | PromptMessage[]>;
}

/** A prompt `createMcpServer` serves (made by {@link prompt}). */
export interface McpPrompt {
  readonly kind: 'prompt';
  readonly name: string;
  readonly deadlineMs: number;
  readonly schema: z.ZodType;
  readonly listing: PromptListing;
  readonly scopes: readonly string[];
  readonly complete: Readonly<Record<string, Completer>>;
  readonly get: (args: never, ctx: ReadContext) => unknown;
}

const PROMPT_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

const isZod = (value: unknown): value is z.ZodType =>
  typeof value === 'object' && value !== null && '_zod' in value;

const parsePrompt = defineOptions<PromptDefinition>()(
  'prompt',
  {
    name: o
      .string()
      .min(1)
      .refine((name) => PROMPT_NAME.test(name), '1 to 128 of A-Z a-z 0-9 _ - .'),
    title: o.string().min(1).optional(),
    description: o.string().min(1).optional(),
    arguments: o
      .custom<PromptArguments>(
        (v) => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every(isZod),
        'a zod shape ({ name: z.string() })',
      )
      .optional(),
    deadlineMs: o.number().int().min(1).max(TOOL_DEADLINE_MAX_MS).default(TOOL_DEADLINE_DEFAULT_MS),
    scopes: scopesOption,
    complete: o
      .custom<{ readonly [x: string]: Completer | undefined }>(
        (v) =>
          typeof v === 'object' &&
          v !== null &&
          !Array.isArray(v) &&
          Object.values(v).every((fn) => typeof fn === 'function'),
        'an object of completer functions by argument name',
      )
      .optional(),
    get: o.fn<PromptDefinition['get']>(),
  },
  ({ arguments: shape, complete }, report) => {
    if (complete === undefined || shape === undefined) return;
    const unknown = Object.keys(complete).find((name) => !(name in shape));
    if (unknown !== undefined) report('complete', "completers of the prompt's arguments", unknown);
  },
);

/**
 * Defines a prompt (MCP "Prompts"): listed by `prompts/list` with its arguments, built by `prompts/get`. The
 * arguments are checked with the zod shape first: a bad one is answered -32602 naming the problems.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `prompt`) naming every bad option: a bad name,
 *   an empty title or description, arguments that are not a zod shape, a `deadlineMs` not an integer in
 *   [1, 30 000], `scopes` that are not scope tokens, a `complete` that is not functions or names an argument
 *   the prompt lacks, a `get` that is not a function.
 */
export function prompt<A extends PromptArguments>(definition: PromptDefinition<A>): McpPrompt {
  const parsed = parsePrompt(definition as unknown as PromptDefinition);
  const shape = parsed.arguments ?? {};
  const listing: PromptListing = { name: parsed.name };
  if (parsed.title !== undefined) listing.title = parsed.title;
  if (parsed.description !== undefined) listing.description = parsed.description;
  const args = Object.entries(shape).map(([name, schema]) => {
    const entry: { name: string; description?: string; required: boolean } = {
      name,
      required: !schema.safeParse(undefined).success,
    };
    const description = describedAs(schema);
    if (description !== undefined) entry.description = description;
    return entry;
  });
  if (args.length > 0) listing.arguments = args;
  return {
    kind: 'prompt',
    name: parsed.name,
    deadlineMs: parsed.deadlineMs,
    schema: z.object(shape),
    listing,
    scopes: parsed.scopes,
    complete: (parsed.complete ?? {}) as Record<string, Completer>,
    get: parsed.get as McpPrompt['get'],
  };
}

/**
 * A schema's description, looked for through wrappers too: zod keeps `.describe()` on the schema it was
 * called on, so `z.string().describe('…').optional()` carries it on the inner one.
 */
function describedAs(schema: z.ZodType): string | undefined {
  let current: unknown = schema;
  for (let depth = 0; depth < 8 && isZod(current); depth++) {
    if (current.description !== undefined) return current.description;
    const unwrap = (current as { unwrap?: () => unknown }).unwrap;
    if (typeof unwrap !== 'function') return undefined;
    current = unwrap.call(current);
  }
  return undefined;
}

/** A get's answer as a `prompts/get` result (a bare array is the messages). */
export function promptResult(value: unknown): PromptResult {
  if (Array.isArray(value)) return { messages: value as PromptMessage[] };
  if (typeof value === 'object' && value !== null && Array.isArray((value as PromptResult).messages))
    return value as PromptResult;
  throw new TypeError('a prompt must return messages or { description?, messages }');
}

/**
 * The one shape of asking the user, shared by synchronous calls (`src/mcp/input.ts`) and background jobs
 * (`src/jobs/input.ts`): a form question as MCP elicitation's `elicitation/create` in form mode, and its
 * answer as MCP's `ElicitResult` (MCP 2025-11-25, "Elicitation"). Types and the key rule only; each side
 * checks answers against the schema with its own bounds.
 */

/**
 * A form's schema, as MCP elicitation's `requestedSchema`: `{ type: 'object', properties: { <name>: { type:
 * 'string' | 'number' | 'integer' | 'boolean' | 'array', … } }, required?: [<name>…] }` (an `array` is a
 * multi-select of string `items.enum`). Nested objects are not allowed, as there.
 */
export interface InputSchema {
  readonly type: 'object';
  readonly properties: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly required?: readonly string[];
  readonly [extra: string]: unknown;
}

/** One form question (MCP `elicitation/create`, form mode): what `ctx.requestInput` takes. */
export interface InputQuestion {
  /** What the user reads. Non-empty. */
  message: string;
  /** The fields of the answer's `content`; default none (a yes/no: the answer's `action`). */
  schema?: InputSchema;
  /**
   * Names the question across rounds and reruns: {@link INPUT_KEY_RULE}. Default: the ordinal of the
   * `requestInput` call within the run (`'0'`, `'1'`, …), stable as long as the handler asks in the same order.
   */
  key?: string;
}

/**
 * The user's answer to a form question (MCP `ElicitResult`): `accept` with `content` (the fields, fitting the
 * question's schema; `{}` or absent when it has none), or `decline` / `cancel` without content.
 */
export interface InputAnswer {
  action: 'accept' | 'decline' | 'cancel';
  /** The fields, when `action` is `accept`. */
  content?: Record<string, unknown>;
}

/** The rule of a question key, in words: 1..64 characters of `A-Za-z0-9_.:-`. */
export const INPUT_KEY_RULE = '1..64 of A-Za-z0-9_.:-';

const KEY = /^[A-Za-z0-9_.:-]{1,64}$/;

/** True for a question key: {@link INPUT_KEY_RULE}. */
export function isInputKey(key: unknown): key is string {
  return typeof key === 'string' && KEY.test(key);
}

/**
 * Why `answer` is not an {@link InputAnswer}, or undefined when it is one: a known `action`; `content` only
 * with `accept`, and then an object. The content's fit to the schema is the caller's check.
 */
export function inputAnswerShapeProblem(answer: unknown): string | undefined {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) {
    return 'the answer must be an object { action, content? }';
  }
  const { action, content } = answer as Record<string, unknown>;
  if (action !== 'accept' && action !== 'decline' && action !== 'cancel') {
    return 'action must be accept, decline or cancel';
  }
  for (const name of Object.keys(answer)) {
    if (name !== 'action' && name !== 'content') return `${name} is not a field of an answer`;
  }
  if (content === undefined) return undefined;
  if (action !== 'accept') return `content goes only with accept, not ${action}`;
  if (typeof content !== 'object' || content === null || Array.isArray(content)) {
    return 'content must be an object of the requested fields';
  }
  return undefined;
}

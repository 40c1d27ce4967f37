/**
 * Structured logging without a logging library: library code writes through a {@link Log}, which sends each
 * line to a pino-compatible {@link Logger} (pino itself, Fastify's `app.log`, or a test's fake) with the
 * fields of the current {@link LogContext} merged in. Breakwater depends on no logger; the gateway injects
 * one, per component (`logger` options) or for the whole process ({@link setLogger}).
 *
 * Why an `AsyncLocalStorage` scope rather than child loggers: the objects that log (an upstream, the jobs
 * runtime, the operation ledger) are built once at startup, long before any call, and an upstream cannot
 * know which tool call or job it is serving. The scope follows the call through every await, like core's
 * `Deadline`, so an upstream failure deep in a tool's handler is logged with that call's `correlation_id` and
 * `tool`, and inside a job with its `job_id`, with nothing passed by hand.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { isBreakwaterError } from './errors.js';
import type { Disposable } from './events.js';
import { invalidOption } from './options.js';
import { redactText } from './redact.js';

/**
 * A pino-compatible logger: `info`, `warn` and `error` take the line's fields first and its message second
 * (pino's `logger.info({ ... }, 'message')`). `isLevelEnabled`, when present (pino has it), lets a line below
 * the level go unbuilt; `child` is pino's and not needed by Breakwater.
 */
export interface Logger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  child?(bindings: Record<string, unknown>): Logger;
  isLevelEnabled?(level: string): boolean;
}

/** The levels Breakwater writes at. */
export type LogLevel = 'info' | 'warn' | 'error';

/**
 * The fields a {@link LogContext} puts on every line written inside it (snake_case, as they appear in the
 * JSON). Each is set only where it is known: `tool` and `correlation_id` inside a tool call, `operation_id`
 * inside an operation of the ledger, `job_id` and `job_type` inside a job's run.
 */
export interface LogFields {
  readonly correlation_id?: string;
  readonly operation_id?: string;
  readonly job_id?: string;
  readonly job_type?: string;
  readonly tool?: string;
}

const scopes = new AsyncLocalStorage<LogFields>();

/**
 * The log fields of the current call, carried by `AsyncLocalStorage` through every await below
 * {@link LogContext.run}. Read by {@link Log} for every line and by the server's pino `mixin`, so Fastify's
 * own lines written inside a scope carry the fields too.
 */
export const LogContext = {
  /**
   * Runs `fn` with `fields` added to the enclosing scope's (a field given here replaces the enclosing one;
   * an `undefined` value is ignored).
   */
  run<T>(fields: LogFields, fn: () => T): T {
    return scopes.run(merge(scopes.getStore(), fields), fn);
  },

  /**
   * Runs `fn` with `fields` only, whatever the enclosing scope: for work that outlives the call that started
   * it (a job's run must not carry the fields of the request whose enqueue woke the worker).
   *
   * When nothing could read the fields, `fn` runs without a scope: no logger was ever set in this process
   * ({@link setLogger}, or a {@link Log} given its own), no scope is active, and `fields` carry nothing that
   * travels on (`correlation_id`, `operation_id`, `tool`: outbound calls and enqueued jobs take those). Then
   * `job_id` and `job_type` have no reader but {@link LogContext.fields}, and entering a scope would make
   * every promise of the run pay Node's async hooks (~9 % of the jobs bench on Node 20).
   */
  runDetached<T>(fields: LogFields, fn: () => T): T {
    if (
      !loggerSeen &&
      fields.correlation_id === undefined &&
      fields.operation_id === undefined &&
      fields.tool === undefined &&
      scopes.getStore() === undefined
    ) {
      return fn();
    }
    return scopes.run(merge(undefined, fields), fn);
  },

  /** The current fields, or `undefined` outside any scope. */
  fields(): LogFields | undefined {
    return scopes.getStore();
  },

  /** The current `correlation_id`, or `undefined`. */
  correlationId(): string | undefined {
    return scopes.getStore()?.correlation_id;
  },
};

function merge(parent: LogFields | undefined, fields: LogFields): LogFields {
  const out: Record<string, string> = parent === undefined ? {} : { ...parent };
  for (const key of Object.keys(fields) as (keyof LogFields)[]) {
    const value = fields[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

let processLogger: Logger | undefined;
/** True once any logger was set or given in this process (see {@link LogContext.runDetached}). */
let loggerSeen = false;

/**
 * Sets the process's logger: where the lines of every component built without its own `logger` option go
 * (the gateway passes Fastify's `app.log`). Default: none, and nothing is written (quiet in tests and in
 * library use). Returns a disposable that puts the previous logger back.
 * @throws RangeError when `logger` is neither undefined nor a {@link Logger}.
 */
export function setLogger(logger: Logger | undefined): Disposable {
  if (logger !== undefined) {
    loggerOption('setLogger', 'logger', logger);
    loggerSeen = true;
  }
  const previous = processLogger;
  processLogger = logger;
  let active = true;
  return {
    dispose() {
      if (!active) return;
      active = false;
      if (processLogger === logger) processLogger = previous;
    },
  };
}

/** The process's logger (see {@link setLogger}), or `undefined`. */
export function getLogger(): Logger | undefined {
  return processLogger;
}

/**
 * A pino-compatible logger given as an option: `undefined`, or an object with `info`, `warn` and `error`
 * functions. A `partial` logger (the operation ledger's older `{ warn }`) may lack some: lines at a level it
 * lacks are dropped.
 * @throws RangeError naming `owner` and `option`.
 */
export function loggerOption(
  owner: string,
  option: string,
  value: unknown,
  partial = false,
): Logger | undefined {
  if (value === undefined) return undefined;
  const methods = ['info', 'warn', 'error'] as const;
  const ok =
    typeof value === 'object' &&
    value !== null &&
    (partial
      ? methods.some((m) => typeof (value as Record<string, unknown>)[m] === 'function')
      : methods.every((m) => typeof (value as Record<string, unknown>)[m] === 'function'));
  if (!ok) {
    const rule = partial
      ? 'a pino-compatible logger (info, warn or error methods)'
      : 'a pino-compatible logger with info, warn and error methods';
    throw invalidOption(owner, option, rule, value);
  }
  return value as Logger;
}

/**
 * Where a component writes its lines: its own logger when it was given one, else the process's
 * ({@link setLogger}, read at each line, so a logger set after the component was built is used). Every line
 * gets the current {@link LogContext} fields (the line's own fields win). A logger that throws never breaks
 * the work that logged.
 */
export class Log {
  constructor(private readonly own?: Partial<Logger>) {
    if (own !== undefined) loggerSeen = true;
  }

  /**
   * True when a line at `level` would be written: build the fields of a line on a hot path only then (no
   * logger, a logger without that level, or pino's `isLevelEnabled` saying no).
   */
  enabled(level: LogLevel): boolean {
    const target = this.own ?? processLogger;
    if (target === undefined || typeof target[level] !== 'function') return false;
    if (typeof target.isLevelEnabled !== 'function') return true;
    try {
      return target.isLevelEnabled(level);
    } catch {
      return true;
    }
  }

  info(fields: object, message: string): void {
    this.write('info', fields, message);
  }

  warn(fields: object, message: string): void {
    this.write('warn', fields, message);
  }

  error(fields: object, message: string): void {
    this.write('error', fields, message);
  }

  write(level: LogLevel, fields: object, message: string): void {
    const target = this.own ?? processLogger;
    const method = target?.[level];
    if (typeof method !== 'function') return;
    const scope = scopes.getStore();
    try {
      method.call(target, scope === undefined ? fields : { ...scope, ...fields }, message);
    } catch {
      // A broken logger must not fail a tool call, a job or an operation.
    }
  }
}

/** What {@link errorFields} makes of a failure. */
export interface ErrorLogFields {
  /** The error's class name (`BreakwaterError`, `TypeError`, …). */
  type: string;
  /** A BreakwaterError's code, or a Node/undici error's `code` (`ECONNREFUSED`). */
  code?: string;
  /** The message, with credentials and card-like numbers masked. */
  message: string;
  /** Only for errors that are not BreakwaterErrors (bugs and foreign failures), masked like the message. */
  stack?: string;
}

/**
 * A failure as log fields (put it under `err`): its type, code and message, with the free text masked by
 * core's {@link redactText} (a `Bearer …` token, a URL's `user:password@`, a secret query parameter, a card
 * number), since a driver's or a handler's message may quote what it was given. A BreakwaterError is an
 * expected failure and gets no stack.
 */
export function errorFields(error: unknown): ErrorLogFields {
  if (!(error instanceof Error)) return { type: typeof error, message: redactText(String(error)) };
  const fields: ErrorLogFields = { type: error.name, message: redactText(error.message) };
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') fields.code = code;
  if (!isBreakwaterError(error) && typeof error.stack === 'string') fields.stack = redactText(error.stack);
  return fields;
}

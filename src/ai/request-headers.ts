/**
 * The per-request headers (prefix `x-breakwater-`), read into step settings and metadata. A bad value is a
 * 400 `invalid_payload` problem whose message names the header, with `details.reason: 'invalid_header'` and
 * `details.header`, so a client can tell which one to fix.
 */
import { BreakwaterError } from '../core/index.js';
import type { BackoffKind, Metadata, MetadataValue, StepSettings } from './types.js';

/** Bounds of the header values (docs/architecture.md#defaults: ≤ 5 attempts, delay ≤ 5 s). */
export const HEADER_BOUNDS = {
  /** `x-breakwater-request-timeout`: ms to the provider's first byte. */
  timeoutMs: { min: 1, max: 600_000 },
  /** `x-breakwater-max-attempts`: calls, the first included. */
  maxAttempts: { min: 1, max: 5 },
  /** `x-breakwater-retry-delay`: ms. */
  retryDelayMs: { min: 0, max: 5_000 },
  /** `x-breakwater-metadata`: at most this many keys, key and string value lengths, and header bytes. */
  metadata: { maxKeys: 32, maxKeyLength: 64, maxValueLength: 256, maxBytes: 4_096 },
} as const;

/** The values `x-breakwater-backoff` accepts. */
export const BACKOFF_KINDS: readonly BackoffKind[] = ['constant', 'linear', 'exponential'];

/** The headers as Node gives them (lower-case names; a repeated header is an array). */
export type IncomingHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** What the headers say. */
export interface RequestHeaderValues {
  overrides: StepSettings;
  metadata: Metadata;
}

const EMPTY_METADATA: Metadata = Object.freeze({});

/**
 * Reads `x-breakwater-request-timeout`, `-max-attempts`, `-retry-delay`, `-backoff` and `-metadata` (as sent,
 * whoever sends it: the gateway's route reads the metadata through `callerMetadata`, which decides whether
 * the caller may send it).
 * @throws BreakwaterError `invalid_payload` (400) naming the header when a value is malformed or out of bounds,
 *   or a header is sent twice.
 */
export function readRequestHeaders(headers: IncomingHeaders): RequestHeaderValues {
  const overrides = readOverrides(headers);
  const meta = one(headers, 'x-breakwater-metadata');
  return { overrides, metadata: meta === undefined ? EMPTY_METADATA : parseMetadata(meta) };
}

/**
 * Reads the step settings of `x-breakwater-request-timeout`, `-max-attempts`, `-retry-delay` and `-backoff`.
 * @throws BreakwaterError `invalid_payload` (400) naming the header, as {@link readRequestHeaders}.
 */
export function readOverrides(headers: IncomingHeaders): StepSettings {
  const overrides: StepSettings = {};
  const timeout = one(headers, 'x-breakwater-request-timeout');
  if (timeout !== undefined) {
    overrides.timeoutMs = integer('x-breakwater-request-timeout', timeout, HEADER_BOUNDS.timeoutMs, 'ms');
  }
  const attempts = one(headers, 'x-breakwater-max-attempts');
  if (attempts !== undefined) {
    overrides.maxAttempts = integer('x-breakwater-max-attempts', attempts, HEADER_BOUNDS.maxAttempts, '');
  }
  const delay = one(headers, 'x-breakwater-retry-delay');
  if (delay !== undefined) {
    overrides.retryDelayMs = integer('x-breakwater-retry-delay', delay, HEADER_BOUNDS.retryDelayMs, 'ms');
  }
  const backoff = one(headers, 'x-breakwater-backoff');
  if (backoff !== undefined) {
    const kind = backoff.trim().toLowerCase() as BackoffKind;
    if (!BACKOFF_KINDS.includes(kind)) {
      throw invalidHeader('x-breakwater-backoff', 'must be constant, linear or exponential');
    }
    overrides.backoff = kind;
  }
  return overrides;
}

/**
 * Parses `x-breakwater-metadata`: a JSON object (at most 32 keys of 1..64 characters) whose values are
 * strings (≤ 256 characters), finite numbers, booleans or null.
 * @throws BreakwaterError `invalid_payload` naming the header.
 */
export function parseMetadata(text: string): Metadata {
  const header = 'x-breakwater-metadata';
  const b = HEADER_BOUNDS.metadata;
  if (Buffer.byteLength(text) > b.maxBytes)
    throw invalidHeader(header, `must be at most ${b.maxBytes} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidHeader(header, 'must be a JSON object');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalidHeader(header, 'must be a JSON object');
  }
  const entries = Object.entries(parsed);
  if (entries.length > b.maxKeys) throw invalidHeader(header, `must have at most ${b.maxKeys} keys`);
  const metadata: Record<string, MetadataValue> = Object.create(null) as Record<string, MetadataValue>;
  for (const [key, value] of entries) {
    if (key.length === 0 || key.length > b.maxKeyLength) {
      throw invalidHeader(header, `keys must be 1 to ${b.maxKeyLength} characters`);
    }
    const ok =
      value === null ||
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value)) ||
      (typeof value === 'string' && value.length <= b.maxValueLength);
    if (!ok) {
      throw invalidHeader(
        header,
        `values must be strings (at most ${b.maxValueLength} characters), numbers, booleans or null; "${key}" is not`,
      );
    }
    metadata[key] = value as MetadataValue;
  }
  return Object.freeze(metadata);
}

/** A 400 naming the header (`details.reason: 'invalid_header'`). */
export function invalidHeader(header: string, rule: string): BreakwaterError {
  return new BreakwaterError('invalid_payload', {
    message: `The ${header} header ${rule}.`,
    details: { reason: 'invalid_header', header },
  });
}

function one(headers: IncomingHeaders, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) throw invalidHeader(name, 'must be sent once');
  return value;
}

function integer(header: string, text: string, bounds: { min: number; max: number }, unit: string): number {
  const trimmed = text.trim();
  const value = /^\d{1,9}$/.test(trimmed) ? Number(trimmed) : NaN;
  if (!(value >= bounds.min && value <= bounds.max)) {
    const what = unit === '' ? 'an integer' : `an integer number of ${unit}`;
    throw invalidHeader(header, `must be ${what} from ${bounds.min} to ${bounds.max}`);
  }
  return value;
}

/**
 * The request fingerprint: which fields of a request make it "the same request" for an idempotency key
 * (draft-ietf-httpapi-idempotency-key-header, section 2.4: a reused key with a different payload is a
 * misuse, answered 422).
 */
import { createHash } from 'node:crypto';
import { OptionsError, Schema, fingerprint, type OptionProblem } from '../../core/index.js';

/** The parts of a request a fingerprint may read; `headers` as Node gives them (lowercase names). */
export interface FingerprintRequest {
  /** HTTP method; compared uppercase. */
  method: string;
  /** The request target as received (`/orders?x=1`): the path, and the query after `?`. */
  url: string;
  /** The parsed body (a JSON value), a string or bytes (hashed as they are), or undefined/null for none. */
  body?: unknown;
  headers?: Readonly<Record<string, string | readonly string[] | undefined>>;
}

/**
 * Which fields count. Defaults: method, path without the query, and the whole body.
 */
export interface FingerprintFieldOptions {
  /** Include the query string (raw, as sent). Default false: a query usually carries paging or tracing. */
  query?: boolean;
  /**
   * Which top-level members of a JSON object body count: `'all'` (default) the whole body, `'none'` no body
   * at all, or a list of member names (a member that is absent counts as absent; a body that is not an
   * object counts whole).
   */
  body?: 'all' | 'none' | readonly string[];
  /** Request headers that count (names, any case; default none). An absent header counts as absent. */
  headers?: readonly string[];
}

/**
 * The fields that count: a {@link FingerprintFieldOptions} selection, or a function returning any JSON value
 * built from the request (its canonical JSON is hashed, RFC 8785).
 */
export type FingerprintFields = FingerprintFieldOptions | ((request: FingerprintRequest) => unknown);

/**
 * SHA-256 of the request's significant fields (core's `fingerprint`: the canonical JSON, RFC 8785, of
 * `{ method, path, query?, body?, headers? }`), 64 lowercase hex characters. Equal JSON bodies give equal
 * fingerprints whatever their key order or whitespace; a string or bytes body counts by the SHA-256 of its
 * bytes (`{ sha256: hex }`).
 *
 * @param fields the selection (default: method, path, whole body) or a function of the request.
 * @throws BreakwaterError `invalid_payload` when the selected value has no JSON form (a BigInt, a cycle).
 */
export function requestFingerprint(request: FingerprintRequest, fields: FingerprintFields = {}): string {
  if (typeof fields === 'function') return fingerprint(fields(request) ?? null);
  const q = request.url.indexOf('?');
  const significant: Record<string, unknown> = {
    method: request.method.toUpperCase(),
    path: q < 0 ? request.url : request.url.slice(0, q),
  };
  if (fields.query === true) significant.query = q < 0 ? '' : request.url.slice(q + 1);
  const body = fields.body ?? 'all';
  if (body !== 'none') significant.body = bodyValue(request.body, body);
  if (fields.headers !== undefined && fields.headers.length > 0) {
    const headers: Record<string, string | null> = {};
    for (const name of fields.headers) {
      const lower = name.toLowerCase();
      const value = request.headers?.[lower];
      headers[lower] = value === undefined ? null : typeof value === 'string' ? value : value.join(', ');
    }
    significant.headers = headers;
  }
  return fingerprint(significant);
}

/**
 * A {@link FingerprintFields} option (left out, a function, or `{ query?, body?, headers? }`), for an options
 * shape; each bad member is reported as `<option>.query`, `<option>.body`, `<option>.headers`.
 */
export const FINGERPRINT_FIELDS_SCHEMA = new Schema<FingerprintFields | undefined>(
  (fields, option, problems) => {
    if (fields === undefined || typeof fields === 'function') return fields as FingerprintFields | undefined;
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
      problems.push({ option, rule: 'an object { query?, body?, headers? } or a function', value: fields });
      return undefined;
    }
    const { query, body, headers } = fields as FingerprintFieldOptions;
    if (query !== undefined && typeof query !== 'boolean') {
      problems.push({ option: `${option}.query`, rule: 'a boolean', value: query });
    }
    if (
      body !== undefined &&
      body !== 'all' &&
      body !== 'none' &&
      !(Array.isArray(body) && body.every((name) => typeof name === 'string'))
    ) {
      problems.push({
        option: `${option}.body`,
        rule: "'all', 'none' or an array of member names",
        value: body,
      });
    }
    if (
      headers !== undefined &&
      !(Array.isArray(headers) && headers.every((name) => typeof name === 'string' && name !== ''))
    ) {
      problems.push({ option: `${option}.headers`, rule: 'an array of header names', value: headers });
    }
    return fields as FingerprintFields;
  },
);

/**
 * Checks a {@link FingerprintFields} option at construction.
 * @throws OptionsError (`RangeError`, `invalid_options`) naming `owner` and every bad member of the option.
 */
export function checkFingerprintFields(owner: string, option: string, fields: unknown): void {
  const problems: OptionProblem[] = [];
  FINGERPRINT_FIELDS_SCHEMA.check(fields, option, problems);
  if (problems.length > 0) throw new OptionsError(owner, problems);
}

function bodyValue(body: unknown, selection: 'all' | readonly string[]): unknown {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string' || body instanceof Uint8Array) {
    return { sha256: createHash('sha256').update(body).digest('hex') };
  }
  if (selection === 'all' || typeof body !== 'object' || Array.isArray(body)) return body;
  const record = body as Record<string, unknown>;
  const picked: Record<string, unknown> = {};
  for (const name of selection) {
    if (Object.prototype.hasOwnProperty.call(record, name)) picked[name] = record[name];
  }
  return picked;
}

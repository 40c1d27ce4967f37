import { BreakwaterError, bool, finite, invalidOption, oneOf, POSITIVE } from '../core/index.js';
import { AUDIT_READ_DEFAULT_LIMIT, AUDIT_READ_MAX_LIMIT } from './audit.js';
import { MAX_COUNTER_KEY_LENGTH, UNCHANGED, type CounterOutcome, type CounterStep } from './counters.js';
import {
  MAX_IDEMPOTENCY_KEY_LENGTH,
  type IdempotencyClaim,
  type IdempotencyRef,
  type StoredResponse,
} from './idempotency.js';
import {
  MAX_OPERATION_FIELD_LENGTH,
  OPERATION_LIST_DEFAULT_LIMIT,
  OPERATION_LIST_MAX_LIMIT,
  OPERATION_STATES,
  type NewOperation,
  type OperationFilter,
  type OperationPatch,
  type OperationState,
} from './operations.js';
import { MAX_OWNER_LENGTH, type NewJob } from './jobs.js';
import { MAX_ROUTE_NAME_LENGTH } from './routes.js';

/**
 * Argument checks of the job (NewJob), idempotency, operation, audit, counter and route stores, shared by both backends so they accept and
 * refuse exactly the same input, always before anything is written. NUL is refused in every string stored as
 * text because PostgreSQL text cannot hold it. Internal to `store/`.
 */

/** Largest `priority` and `maxAttempts` a job may have: PostgreSQL's `integer`. */
const INT32_MAX = 2_147_483_647;

/**
 * A copy of `job` with exactly {@link NewJob}'s fields, checked against what both job stores can keep (the
 * `jobs` table's columns and constraints), so a bad job is refused before anything is queued or written — on
 * SQLite, inside a group commit, a job refused by the database after the batch had written would take the
 * whole batch down with it. The jobs API checks the same (and more) with friendlier messages; this guards
 * direct store calls and the webhook inbox.
 * @throws TypeError naming the field: `type` not a non-empty string without NUL; `runAt` not a safe integer;
 *   `priority` not a 32-bit integer; `maxAttempts` not an integer from 1 to 2^31 - 1; `timeoutMs` set and not
 *   a safe integer > 0; `idempotencyKey` or `orderingKey` set and not a non-empty string without NUL; `owner`
 *   set, not null and not a string of 1..{@link MAX_OWNER_LENGTH} without NUL.
 */
export function checkNewJob(job: NewJob): NewJob {
  if (typeof job !== 'object' || job === null) throw new TypeError('job store: a job must be an object');
  const { type, payload, runAt, priority, maxAttempts, timeoutMs, idempotencyKey, orderingKey, owner } = job;
  if (!isStoreKey(type, Number.MAX_SAFE_INTEGER)) throw bad('type', 'a non-empty string without NUL', type);
  if (!Number.isSafeInteger(runAt)) throw bad('runAt', 'a safe integer (ms)', runAt);
  if (!(Number.isInteger(priority) && priority >= -INT32_MAX - 1 && priority <= INT32_MAX)) {
    throw bad('priority', 'a 32-bit integer', priority);
  }
  if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1 && maxAttempts <= INT32_MAX)) {
    throw bad('maxAttempts', 'an integer from 1 to 2147483647', maxAttempts);
  }
  const copy: NewJob = { type, payload, runAt, priority, maxAttempts };
  if (timeoutMs !== undefined) {
    if (!(Number.isSafeInteger(timeoutMs) && timeoutMs > 0))
      throw bad('timeoutMs', 'an integer > 0', timeoutMs);
    copy.timeoutMs = timeoutMs;
  }
  if (idempotencyKey !== undefined) {
    if (!isStoreKey(idempotencyKey, Number.MAX_SAFE_INTEGER)) {
      throw bad('idempotencyKey', 'a non-empty string without NUL', idempotencyKey);
    }
    copy.idempotencyKey = idempotencyKey;
  }
  if (orderingKey !== undefined) {
    if (!isStoreKey(orderingKey, Number.MAX_SAFE_INTEGER)) {
      throw bad('orderingKey', 'a non-empty string without NUL', orderingKey);
    }
    copy.orderingKey = orderingKey;
  }
  if (owner !== undefined && owner !== null) {
    if (!isStoreKey(owner, MAX_OWNER_LENGTH)) {
      throw bad('owner', `null or a string of 1 to ${MAX_OWNER_LENGTH} characters without NUL`, owner);
    }
    copy.owner = owner;
  }
  return copy;
}

function bad(field: string, rule: string, value: unknown): TypeError {
  return new TypeError(`job store: ${field} must be ${rule}, got ${String(value)}`);
}

/** A string the stores keep as a key: 1..`max` UTF-16 code units, no NUL. */
export function isStoreKey(value: unknown, max = MAX_OPERATION_FIELD_LENGTH): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= max && !value.includes('\0');
}

/** @throws RangeError naming `owner` and `field` unless `value` {@link isStoreKey}. */
export function storeKey(
  owner: string,
  field: string,
  value: unknown,
  max = MAX_OPERATION_FIELD_LENGTH,
): string {
  if (isStoreKey(value, max)) return value;
  throw invalidOption(owner, field, `a string of 1 to ${max} characters without NUL`, value);
}

/**
 * `value` as JSON text, computed before any write.
 * @throws BreakwaterError `invalid_payload` (`details.field`) when it has no JSON form (undefined, a function,
 *   a symbol, a BigInt, a cycle).
 */
export function jsonText(field: string, value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value) as string | undefined;
  } catch (cause) {
    throw noJson(field, cause);
  }
  if (text === undefined) throw noJson(field, undefined);
  return text;
}

function noJson(field: string, cause: unknown): BreakwaterError {
  return new BreakwaterError('invalid_payload', {
    message: `The operation's ${field} must be a JSON value.`,
    details: { field },
    cause,
  });
}

/** A page size: `limit` floored into `[0, max]`; `fallback` when unset or NaN. */
export function pageLimit(limit: number | undefined, fallback: number, max: number): number {
  if (limit === undefined || Number.isNaN(limit)) return fallback;
  return Math.min(Math.max(Math.floor(limit), 0), max);
}

// ---- idempotency ----------------------------------------------------------------------------------------

/**
 * A copy of a checked claim (the caller may reuse its object before a queued write runs).
 * @throws RangeError as `IdempotencyStore.begin` documents.
 */
export function checkClaim(claim: IdempotencyClaim): IdempotencyClaim {
  const owner = 'idempotency.begin';
  if (typeof claim !== 'object' || claim === null) throw invalidOption(owner, 'claim', 'an object', claim);
  const lockMs = finite(owner, 'lockMs', claim.lockMs, POSITIVE);
  const ttlMs = finite(owner, 'ttlMs', claim.ttlMs, POSITIVE);
  // The same rule as operations' checkIdempotencyLifetimes (store cannot import it): a record that expires
  // under its running owner is replaced by the next request, which runs again.
  if (!(ttlMs > lockMs)) {
    throw invalidOption(
      owner,
      'ttlMs',
      `greater than lockMs (${lockMs} ms): a record must outlive the lock of the run that holds it`,
      ttlMs,
    );
  }
  return {
    scope: storeKey(owner, 'scope', claim.scope, MAX_IDEMPOTENCY_KEY_LENGTH),
    key: storeKey(owner, 'key', claim.key, MAX_IDEMPOTENCY_KEY_LENGTH),
    fingerprint: storeKey(owner, 'fingerprint', claim.fingerprint, MAX_IDEMPOTENCY_KEY_LENGTH),
    lockMs,
    ttlMs,
  };
}

/** A ref that can own a record (anything else owns none: `complete` and `release` answer false). */
export function isIdempotencyRef(ref: IdempotencyRef): boolean {
  return (
    typeof ref === 'object' &&
    ref !== null &&
    isStoreKey(ref.scope, MAX_IDEMPOTENCY_KEY_LENGTH) &&
    isStoreKey(ref.key, MAX_IDEMPOTENCY_KEY_LENGTH) &&
    isStoreKey(ref.token)
  );
}

/**
 * The response as the JSON text stored for replay: exactly its four fields.
 * @throws RangeError for a status that is not an integer 100..599, headers that are not an object of
 *   strings, a body that is not a string, or a `bodyEncoding` other than `utf8` / `base64`.
 */
export function responseText(response: StoredResponse): string {
  const owner = 'idempotency.complete';
  if (typeof response !== 'object' || response === null) {
    throw invalidOption(owner, 'response', 'an object', response);
  }
  const status = finite(owner, 'response.status', response.status, { min: 100, max: 599, integer: true });
  const { headers, body } = response;
  if (
    typeof headers !== 'object' ||
    headers === null ||
    Array.isArray(headers) ||
    !Object.values(headers).every((value) => typeof value === 'string')
  ) {
    throw invalidOption(owner, 'response.headers', 'an object of string values', headers);
  }
  if (typeof body !== 'string') throw invalidOption(owner, 'response.body', 'a string', body);
  const bodyEncoding = oneOf(owner, 'response.bodyEncoding', response.bodyEncoding, ['utf8', 'base64']);
  return JSON.stringify({ status, headers: { ...headers }, body, bodyEncoding });
}

// ---- operations -----------------------------------------------------------------------------------------

/** A new operation checked and serialized, with its id: what both backends insert. */
export interface PreparedOperation {
  id: string;
  action: string;
  target: string;
  key: string | null;
  request: string;
  correlationId: string;
  retryAllowed: boolean;
  /** JSON text of the hint, or null. */
  reconcile: string | null;
  recoveryDeadlineAt: number;
  owner: string | null;
}

/** @throws RangeError / BreakwaterError `invalid_payload` as `OperationStore.begin` documents. */
export function prepareOperation(operation: NewOperation, newOperationId: string): PreparedOperation {
  const owner = 'operations.begin';
  if (typeof operation !== 'object' || operation === null) {
    throw invalidOption(owner, 'operation', 'an object', operation);
  }
  const id = operation.id === undefined ? newOperationId : storeKey(owner, 'id', operation.id);
  const { reconcile } = operation;
  if (
    reconcile !== null &&
    !(typeof reconcile === 'object' && isStoreKey(reconcile.method) && typeof reconcile.path === 'string')
  ) {
    throw invalidOption(owner, 'reconcile', 'null or an object { method, path } of strings', reconcile);
  }
  return {
    id,
    action: storeKey(owner, 'action', operation.action),
    target: storeKey(owner, 'target', operation.target),
    key: operation.key === undefined ? null : storeKey(owner, 'key', operation.key),
    correlationId:
      operation.correlationId === undefined ? id : storeKey(owner, 'correlationId', operation.correlationId),
    retryAllowed: bool(owner, 'retryAllowed', operation.retryAllowed),
    reconcile: reconcile === null ? null : JSON.stringify({ method: reconcile.method, path: reconcile.path }),
    recoveryDeadlineAt: finite(owner, 'recoveryDeadlineAt', operation.recoveryDeadlineAt),
    request: jsonText('request', operation.request),
    owner: operation.owner == null ? null : storeKey(owner, 'owner', operation.owner, MAX_OWNER_LENGTH),
  };
}

/**
 * A patch checked and serialized: `set*` says whether a nullable field is written (absent or `undefined`
 * fields are left as they are); JSON fields are text.
 */
export interface PreparedPatch {
  state: OperationState | null;
  attempts: number | null;
  setObservation: boolean;
  observation: string | null;
  setResult: boolean;
  result: string | null;
  setError: boolean;
  error: string | null;
  setEvidence: boolean;
  evidence: string | null;
  setNextCheckAt: boolean;
  nextCheckAt: number | null;
}

/**
 * @throws RangeError for an `expectedVersion` that is not an integer >= 1, an unknown `state`, a negative or
 *   non-integer `attempts`, an `observation` that is not null or a 1..255 string without NUL, a `nextCheckAt`
 *   that is not null or finite; BreakwaterError `invalid_payload` for a result, error or evidence with no
 *   JSON form.
 */
export function preparePatch(expectedVersion: number, patch: OperationPatch): PreparedPatch {
  const owner = 'operations.update';
  finite(owner, 'expectedVersion', expectedVersion, { min: 1, integer: true });
  if (typeof patch !== 'object' || patch === null) throw invalidOption(owner, 'patch', 'an object', patch);
  const { observation, nextCheckAt } = patch;
  const json = (field: 'result' | 'error' | 'evidence') =>
    patch[field] === undefined ? null : jsonText(field, patch[field]);
  return {
    state: patch.state === undefined ? null : oneOf(owner, 'state', patch.state, OPERATION_STATES),
    attempts:
      patch.attempts === undefined
        ? null
        : finite(owner, 'attempts', patch.attempts, { min: 0, integer: true }),
    setObservation: observation !== undefined,
    observation: observation == null ? null : storeKey(owner, 'observation', observation),
    setResult: patch.result !== undefined,
    result: json('result'),
    setError: patch.error !== undefined,
    error: json('error'),
    setEvidence: patch.evidence !== undefined,
    evidence: json('evidence'),
    setNextCheckAt: nextCheckAt !== undefined,
    nextCheckAt: nextCheckAt == null ? null : finite(owner, 'nextCheckAt', nextCheckAt),
  };
}

/** A filter checked: `states` deduplicated (an empty list matches nothing), `limit` resolved. */
export interface PreparedFilter {
  states: OperationState[] | undefined;
  action: string | undefined;
  dueBy: number | undefined;
  owner: string | undefined;
  beforeId: string | undefined;
  limit: number;
}

/**
 * @throws RangeError for an unknown state, a `dueBy` that is not finite, a non-string `action` / `owner` /
 *   `beforeId`.
 */
export function prepareFilter(filter: OperationFilter = {}): PreparedFilter {
  const owner = 'operations.list';
  const { action, beforeId, dueBy } = filter;
  if (action !== undefined && typeof action !== 'string')
    throw invalidOption(owner, 'action', 'a string', action);
  if (filter.owner !== undefined && typeof filter.owner !== 'string') {
    throw invalidOption(owner, 'owner', 'a string', filter.owner);
  }
  if (beforeId !== undefined && typeof beforeId !== 'string') {
    throw invalidOption(owner, 'beforeId', 'a string', beforeId);
  }
  return {
    states:
      filter.states === undefined
        ? undefined
        : [...new Set(filter.states.map((state) => oneOf(owner, 'states', state, OPERATION_STATES)))],
    action,
    dueBy: dueBy === undefined ? undefined : finite(owner, 'dueBy', dueBy),
    owner: filter.owner,
    beforeId,
    limit: pageLimit(filter.limit, OPERATION_LIST_DEFAULT_LIMIT, OPERATION_LIST_MAX_LIMIT),
  };
}

/**
 * True when the filter can match nothing (a limit of 0, an empty `states`, an `action` or `owner` no
 * operation can have): the store answers `[]` without a query. Also keeps NUL away from PostgreSQL.
 */
export function matchesNothing(filter: PreparedFilter): boolean {
  return (
    filter.limit === 0 ||
    filter.states?.length === 0 ||
    (filter.action !== undefined && !isStoreKey(filter.action)) ||
    (filter.owner !== undefined && !isStoreKey(filter.owner, MAX_OWNER_LENGTH)) ||
    (filter.beforeId !== undefined && filter.beforeId.includes('\0'))
  );
}

// ---- audit ----------------------------------------------------------------------------------------------

/** Longest audit hash. */
export const MAX_AUDIT_HASH_LENGTH = 128;

/**
 * The sealer's result, checked (a copy: the store keeps exactly these two strings).
 * @throws RangeError for a `body` that is not a string or a `hash` that is not 1..128 characters without NUL.
 */
export function checkSealed(
  sealed: { body: string; hash: string },
  seq: number,
): { body: string; hash: string } {
  const owner = `audit.append (seq ${seq})`;
  if (typeof sealed !== 'object' || sealed === null)
    throw invalidOption(owner, 'sealer result', 'an object', sealed);
  if (typeof sealed.body !== 'string') throw invalidOption(owner, 'body', 'a string', sealed.body);
  return { body: sealed.body, hash: storeKey(owner, 'hash', sealed.hash, MAX_AUDIT_HASH_LENGTH) };
}

/** The sealers as an array copy (the caller may reuse its array before a queued append runs). */
export function sealerList<T>(sealers: readonly T[]): T[] {
  if (!Array.isArray(sealers)) throw new TypeError('audit.append: sealers must be an array of functions');
  return [...sealers];
}

/**
 * `read`'s arguments resolved: `afterSeq` floored (default 0), `limit` floored into `[0, 10 000]` (default 1000).
 * @throws RangeError for an `afterSeq` that is not a finite number.
 */
export function auditPage(
  afterSeq: number | undefined,
  limit: number | undefined,
): { afterSeq: number; limit: number } {
  return {
    afterSeq: afterSeq === undefined ? 0 : Math.floor(finite('audit.read', 'afterSeq', afterSeq)),
    limit: pageLimit(limit, AUDIT_READ_DEFAULT_LIMIT, AUDIT_READ_MAX_LIMIT),
  };
}

// ---- counters -------------------------------------------------------------------------------------------

/** What a counter step decided, checked and serialized: what both backends write (or not). */
export type PreparedOutcome<R> =
  | { write: 'none'; result: R }
  | { write: 'delete'; result: R }
  | { write: 'state'; result: R; state: string; expiresAt: number | null };

/** A time both backends store exactly (PostgreSQL `bigint`, a JS number). */
const SAFE_MS = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER };

/** `CounterStore.update`'s arguments checked. */
export interface CounterUpdate<R> {
  key: string;
  step: CounterStep<R>;
}

/** @throws RangeError unless `key` is 1..512 characters without NUL; TypeError unless `step` is a function. */
export function counterUpdate<R>(key: string, step: CounterStep<R>): CounterUpdate<R> {
  const owner = 'counters.update';
  storeKey(owner, 'key', key, MAX_COUNTER_KEY_LENGTH);
  if (typeof step !== 'function') throw new TypeError(`${owner}: step must be a function`);
  return { key, step };
}

/**
 * A step's outcome as the store writes it: `UNCHANGED` writes nothing, `undefined` deletes, anything else is
 * stored as JSON text with its expiry rounded up to a whole ms (never early; the same on both backends).
 * @throws TypeError for an outcome that is not an object or a state with no JSON form (a function, a symbol,
 *   a BigInt, a cycle); RangeError for an `expiresAt` that is neither null nor a finite number within ±2^53.
 */
export function prepareOutcome<R>(outcome: CounterOutcome<R>): PreparedOutcome<R> {
  const owner = 'counters.update';
  if (typeof outcome !== 'object' || outcome === null) {
    throw new TypeError(`${owner}: the step must return an object { state, expiresAt, result }`);
  }
  const { state, result } = outcome;
  if (state === UNCHANGED) return { write: 'none', result };
  if (state === undefined) return { write: 'delete', result };
  const expiresAt =
    outcome.expiresAt === null ? null : Math.ceil(finite(owner, 'expiresAt', outcome.expiresAt, SAFE_MS));
  return { write: 'state', result, state: jsonValueText(owner, 'state', state), expiresAt };
}

/**
 * `value` as JSON text, for the counter and route stores, whose contracts say TypeError (the idempotency and
 * operation stores' {@link jsonText} throws `invalid_payload` instead).
 * @throws TypeError naming `owner` and `field` when `value` has no JSON form.
 */
export function jsonValueText(owner: string, field: string, value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value) as string | undefined;
  } catch (cause) {
    throw new TypeError(`${owner}: ${field} must be a JSON value (${(cause as Error).message})`, { cause });
  }
  if (text === undefined) throw new TypeError(`${owner}: ${field} must be a JSON value, got ${typeof value}`);
  return text;
}

// ---- routes ---------------------------------------------------------------------------------------------

/** Longest route note. */
export const MAX_ROUTE_NOTE_LENGTH = 1000;

/** Largest route version both backends store (PostgreSQL `integer`). */
const MAX_ROUTE_VERSION = 2_147_483_647;

const ROUTE_NAME = new RegExp(`^[A-Za-z0-9._-]{1,${MAX_ROUTE_NAME_LENGTH}}$`);

/** A name a route can have: 1..128 of `[A-Za-z0-9._-]`. */
export function isRouteName(name: unknown): name is string {
  return typeof name === 'string' && ROUTE_NAME.test(name);
}

/** A version a route can have: an integer from 1 (reads and deploys of anything else find nothing). */
export function isRouteVersion(version: unknown): version is number {
  return Number.isInteger(version) && (version as number) >= 1 && (version as number) <= MAX_ROUTE_VERSION;
}

/** A new route version checked and serialized: what both backends insert. */
export interface PreparedRoute {
  name: string;
  /** The definition as JSON text. */
  definition: string;
  note: string | null;
}

/**
 * @throws RangeError for a bad name, or a note that is not a string of at most 1000 characters without NUL
 *   (`undefined` or null: no note); TypeError for a definition with no JSON form.
 */
export function prepareRoute(name: string, definition: unknown, note: string | undefined): PreparedRoute {
  const owner = 'routes.create';
  if (!isRouteName(name)) {
    throw invalidOption(owner, 'name', `1 to ${MAX_ROUTE_NAME_LENGTH} characters of [A-Za-z0-9._-]`, name);
  }
  if (
    note != null &&
    (typeof note !== 'string' || note.length > MAX_ROUTE_NOTE_LENGTH || note.includes('\0'))
  ) {
    throw invalidOption(
      owner,
      'note',
      `a string of at most ${MAX_ROUTE_NOTE_LENGTH} characters without NUL`,
      note,
    );
  }
  return { name, definition: jsonValueText(owner, 'definition', definition), note: note ?? null };
}

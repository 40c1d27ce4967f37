/**
 * Running a request once per idempotency key (draft-ietf-httpapi-idempotency-key-header, section 2.6;
 * docs/operations.md#inbound-idempotency-idempotency-key): claim the key in the store, run, store the
 * response before the client sees it, replay it to every retry.
 */
import {
  BreakwaterError,
  POSITIVE,
  PROBLEM_CONTENT_TYPE,
  clockOption,
  finite,
  invalidOption,
  isBreakwaterError,
  toProblem,
  type Clock,
} from '../../core/index.js';
import type { IdempotencyRef, IdempotencyStore, StoredResponse } from '../../store/index.js';

/**
 * Defaults of {@link runIdempotent} and the Fastify route option.
 * - `lockMs` 60 s: how long a run holds its key before another request may take it over (its owner is
 *   presumed dead). Twice the hard maximum request deadline (30 s,
 *   docs/architecture.md#deadlines), so a live run is never taken over;
 *   the store has no heartbeat, so a run longer than `lockMs` may run twice.
 * - `ttlMs` 24 h: how long a key and its stored response live (docs/architecture.md#defaults). Must be
 *   greater than
 *   `lockMs` ({@link checkIdempotencyLifetimes}).
 */
export const IDEMPOTENCY_DEFAULTS = { lockMs: 60_000, ttlMs: 86_400_000 } as const;

/** The longest `Retry-After` of a 409 `idempotency_in_progress`, ms: most runs end long before their lock. */
export const IN_PROGRESS_RETRY_MS = 1_000;

/**
 * Statuses that say "the work did not start, a retry is fine": 408 Request Timeout, 409 Conflict, 425 Too
 * Early, 429 Too Many Requests and 503 Service Unavailable (RFC 9110, sections 15.5.9, 15.5.10, 15.6.4;
 * RFC 8470; RFC 6585). After one of these the key is released, so a retry runs afresh. Every other status,
 * 500 included, is stored and replayed (as Stripe does): a 500 may come after the side effect happened, and
 * replaying it is safer than running twice.
 */
export const RETRY_SAFE_STATUSES: ReadonlySet<number> = new Set([408, 409, 425, 429, 503]);

/** A response as a run produces it; `body` text or bytes (default empty), header names any case. */
export interface IdempotentResponse {
  status: number;
  headers?: Readonly<Record<string, string>>;
  body?: string | Uint8Array | null;
}

/**
 * The rule between the two lifetimes: `ttlMs > lockMs`. A record that expired counts as absent, so one that
 * expires while its run still holds the lock is replaced by the next request with the key, which runs again,
 * at the same time; the first run's response is then never stored (its token no longer owns the key), and a
 * record that lives shorter than its run is never replayed at all. With `ttlMs: 1000` under the default 60 s
 * lock and a 2 s handler, three requests with one key ran three times, two at once. The lock is the
 * longest a run may hold its key, so a record that outlives it outlives every run that is not presumed dead.
 * @returns `ttlMs`.
 * @throws RangeError naming `owner` and `ttlMs` (`…: ttlMs must be greater than lockMs (60000 ms): …`).
 */
export function checkIdempotencyLifetimes(owner: string, lockMs: number, ttlMs: number): number {
  if (ttlMs > lockMs) return ttlMs;
  throw invalidOption(owner, 'ttlMs', lifetimesRule(lockMs), ttlMs);
}

/** What `ttlMs` must be next to `lockMs` (follows "must be"; see {@link checkIdempotencyLifetimes}). */
export function lifetimesRule(lockMs: number): string {
  return `greater than lockMs (${lockMs} ms): a record must outlive the lock of the run that holds it`;
}

/** Where and under which key a run is claimed. */
export interface IdempotencyClaimOptions {
  store: IdempotencyStore;
  /** The client identity (1..255 characters, no NUL), e.g. from {@link defaultIdempotencyScope}. */
  scope: string;
  /** The client's key, e.g. from `parseIdempotencyKey`. */
  key: string;
  /** The request's fingerprint, e.g. from `requestFingerprint`. */
  fingerprint: string;
  /** See {@link IDEMPOTENCY_DEFAULTS}; ms, > 0. */
  lockMs?: number;
  /** See {@link IDEMPOTENCY_DEFAULTS}; ms, > `lockMs` ({@link checkIdempotencyLifetimes}). */
  ttlMs?: number;
  /** Reads `now()` for the 409's `retry_after_ms` (default the system clock; pass the store's clock). */
  clock?: Clock;
}

/** What {@link startIdempotent} decided. */
export type IdempotentStart =
  /**
   * Run now, then {@link finishIdempotent} with `ref`. `takenOver`: the key was taken from a run whose lock
   * ran out. `expiresAt` (ms since the epoch, the store's clock): when the record is forgotten; a run still
   * going then no longer owns it (see {@link IdempotentResult.settled}).
   */
  | { outcome: 'acquired'; ref: IdempotencyRef; takenOver: boolean; expiresAt: number }
  /** Answer `response` again, marked replayed. */
  | { outcome: 'replay'; response: StoredResponse };

/**
 * How a run's record was settled: kept with its response (`stored`), deleted for a retry (`released`), or no
 * longer the run's (`not_owner`: taken over after its lock ran out, or expired; see {@link IdempotentResult}).
 */
export type IdempotentSettlement = 'stored' | 'released' | 'not_owner';

/** What {@link runIdempotent} resolves. */
export interface IdempotentResult {
  response: StoredResponse;
  /** True when `response` is a stored one, answered again; the run did not run. */
  replayed: boolean;
  /**
   * For a run that ran: `stored`, `released` (a retry-safe answer, see {@link RETRY_SAFE_STATUSES}),
   * `not_owner` (the run outlived its lock and another request took the key over, whose response is the
   * stored one; or it outlived the record's `ttlMs`, so the record expired and nothing is stored), or
   * `failed` when the store could not be written (`settleError` says why; the run's response is still
   * answered, since the work is done). Undefined for a replay.
   */
  settled?: IdempotentSettlement | 'failed';
  settleError?: unknown;
}

/**
 * Claims the key. The lower half of {@link runIdempotent}, for callers that run the request themselves
 * (the Fastify route option).
 * @throws BreakwaterError `idempotency_in_progress` (409, `retryAfterMs` the time until the running owner's
 *   lock expires, at most {@link IN_PROGRESS_RETRY_MS}) or `idempotency_key_mismatch` (422, the key was used
 *   with another fingerprint); RangeError for a bad option (`ttlMs` not greater than `lockMs` included, see
 *   {@link checkIdempotencyLifetimes}) or a scope/key/fingerprint the store refuses, nothing written; the
 *   store's error when it cannot be reached.
 */
export async function startIdempotent(options: IdempotencyClaimOptions): Promise<IdempotentStart> {
  const lockMs = finite('runIdempotent', 'lockMs', options.lockMs ?? IDEMPOTENCY_DEFAULTS.lockMs, POSITIVE);
  const ttlMs = checkIdempotencyLifetimes(
    'runIdempotent',
    lockMs,
    finite('runIdempotent', 'ttlMs', options.ttlMs ?? IDEMPOTENCY_DEFAULTS.ttlMs, POSITIVE),
  );
  const clock = clockOption('runIdempotent', options.clock);
  const { scope, key, fingerprint } = options;
  const begun = await options.store.begin({ scope, key, fingerprint, lockMs, ttlMs });
  switch (begun.outcome) {
    case 'acquired':
      return {
        outcome: 'acquired',
        ref: { scope, key, token: begun.record.token },
        takenOver: begun.takenOver,
        expiresAt: begun.record.expiresAt,
      };
    case 'completed':
      if (begun.record.response === null) throw new Error('a completed idempotency record has no response');
      return { outcome: 'replay', response: begun.record.response };
    case 'in_progress':
      throw new BreakwaterError('idempotency_in_progress', {
        // Most runs end long before the lock would lapse: ask again within a second.
        retryAfterMs: Math.min(IN_PROGRESS_RETRY_MS, Math.max(1, begun.record.lockedUntil - clock.now())),
      });
    case 'mismatch':
      throw new BreakwaterError('idempotency_key_mismatch');
  }
}

/**
 * Settles a run claimed by {@link startIdempotent}: releases the key when {@link shouldReleaseIdempotency}
 * says a retry may run afresh, otherwise stores `response` for replay.
 * @param response what the client gets; undefined when it cannot be stored (a stream): the key is released.
 * @param failure `{ error }` when the run threw instead of answering (`response` is then its error answer).
 * @throws the store's error when it cannot be written; RangeError for a status outside 100..599.
 */
export async function finishIdempotent(
  store: IdempotencyStore,
  ref: IdempotencyRef,
  response: StoredResponse | undefined,
  failure?: { error: unknown },
): Promise<IdempotentSettlement> {
  if (response === undefined || shouldReleaseIdempotency(response, failure)) {
    return (await store.release(ref)) ? 'released' : 'not_owner';
  }
  return (await store.complete(ref, response)) ? 'stored' : 'not_owner';
}

/**
 * The release rule: true when the key should be freed so a retry runs afresh, false when `response` should
 * be stored and replayed. An unknown outcome (the work may have happened: a thrown BreakwaterError with
 * `outcome: 'unknown'`, or a problem+json body saying `"outcome":"unknown"`) is always stored: a blind re-run
 * could repeat the effect. Otherwise the status decides, for an answer and a throw alike: one in
 * {@link RETRY_SAFE_STATUSES} (a thrown `rate_limited`, `circuit_open`, `bulkhead_full`, …) releases; any
 * other is stored, a 500 from an unexpected throw included (it may have come after the side effect).
 */
export function shouldReleaseIdempotency(response: StoredResponse, failure?: { error: unknown }): boolean {
  if (outcomeUnknown(response)) return false;
  if (failure !== undefined && isBreakwaterError(failure.error) && failure.error.outcome === 'unknown') {
    return false;
  }
  return RETRY_SAFE_STATUSES.has(response.status);
}

/**
 * Runs `run` at most once per `(scope, key)` while the record lives:
 * - the key is new (or its record expired, or its owner's lock ran out): runs `run`, stores its response
 *   (unless {@link shouldReleaseIdempotency} releases it) and only then resolves it, so a client retrying
 *   after its own request committed always gets the replay, never a 409;
 * - the key's run finished: resolves the stored response with `replayed: true`, without running `run`;
 * - if `run` throws, its problem+json answer (status from the error, 500 for an unexpected one) is stored or
 *   released by the same rule as an answer ({@link shouldReleaseIdempotency}), then the error is rethrown.
 *
 * @throws BreakwaterError `idempotency_in_progress` (409) / `idempotency_key_mismatch` (422) from
 *   {@link startIdempotent}; whatever `run` throws. A store failure after the run does not throw: the
 *   response is resolved with `settled: 'failed'`.
 */
export async function runIdempotent(
  options: IdempotencyClaimOptions,
  run: () => Promise<IdempotentResponse>,
): Promise<IdempotentResult> {
  const start = await startIdempotent(options);
  if (start.outcome === 'replay') return { response: start.response, replayed: true };
  let response: StoredResponse;
  let failure: { error: unknown } | undefined;
  try {
    response = toStoredResponse(await run());
  } catch (error) {
    failure = { error };
    response = problemResponse(error);
  }
  const result: IdempotentResult = { response, replayed: false };
  try {
    result.settled = await finishIdempotent(options.store, start.ref, response, failure);
  } catch (error) {
    result.settled = 'failed';
    result.settleError = error;
  }
  if (failure !== undefined) throw failure.error;
  return result;
}

/**
 * A run's response as the store keeps it: header names lowercased, a string body as UTF-8 text, bytes as
 * base64.
 */
export function toStoredResponse(response: IdempotentResponse): StoredResponse {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers ?? {})) headers[name.toLowerCase()] = value;
  const body = response.body ?? '';
  return typeof body === 'string'
    ? { status: response.status, headers, body, bodyEncoding: 'utf8' }
    : {
        status: response.status,
        headers,
        body: Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('base64'),
        bodyEncoding: 'base64',
      };
}

/** The body of a stored response as it was sent: a string, or a Buffer for a base64-stored one. */
export function storedBody(response: StoredResponse): string | Buffer {
  return response.bodyEncoding === 'base64' ? Buffer.from(response.body, 'base64') : response.body;
}

/** A thrown error as the problem+json answer it becomes (RFC 9457, core's `toProblem`). */
function problemResponse(error: unknown): StoredResponse {
  const problem = toProblem(error);
  return {
    status: problem.status,
    headers: { 'content-type': `${PROBLEM_CONTENT_TYPE}; charset=utf-8` },
    body: JSON.stringify(problem),
    bodyEncoding: 'utf8',
  };
}

function outcomeUnknown(response: StoredResponse): boolean {
  const type = response.headers['content-type'] ?? '';
  if (!type.toLowerCase().startsWith(PROBLEM_CONTENT_TYPE) || response.bodyEncoding !== 'utf8') return false;
  try {
    const body = JSON.parse(response.body) as { outcome?: unknown } | null;
    return body?.outcome === 'unknown';
  } catch {
    return false;
  }
}

import type { InputSchema } from '../core/index.js';
import type { JobEvent, JobRecord } from './jobs.js';

/**
 * Input during a job (docs/jobs.md, "Asking for input"): what the store keeps of the questions a handler
 * asked (`ctx.requestInput`) and their answers. The store keeps them as given; the jobs runtime checks keys,
 * sizes, schemas and bounds before it calls the store.
 */

/** Longest input request key, in UTF-16 code units (the key rule is core's `INPUT_KEY_RULE`). */
export const MAX_INPUT_KEY_LENGTH = 64;

export type { InputSchema };

/** The question a job waits on, while it is `input_required`. Times are ms since the epoch. */
export interface InputRequest {
  /** The request's key: its ordinal within the run (`'0'`, `'1'`, …) or the handler's own key. */
  key: string;
  /** What to ask the user (written for users). */
  message: string;
  /** The shape the answer must have, or null for any JSON value. */
  schema: InputSchema | null;
  /** When the handler asked. */
  askedAt: number;
  /** When the job fails with `input_timeout` unless answered (`askedAt + timeoutMs`), or null: never. */
  expiresAt: number | null;
}

/**
 * A job's input state: the open questions (if any) and every answer given so far, by key. A run may ask
 * several questions at once (`ctx.requestInputs`): the job stays `input_required` until each is answered.
 */
export interface JobInput {
  /** The first open question (`requests[0]`) while `input_required`, else null. */
  request: InputRequest | null;
  /** Every open question, in the order asked; empty when none. */
  requests: InputRequest[];
  /** Answers by request key, as given to `JobStore.answerInput`; replayed to later runs. */
  answers: Record<string, unknown>;
  /** Questions asked so far (each one that put the job in `input_required`). */
  rounds: number;
}

/** The input state of a job that never asked anything. */
export const NO_INPUT: JobInput = Object.freeze({
  request: null,
  requests: Object.freeze([]) as unknown as InputRequest[],
  answers: Object.freeze({}),
  rounds: 0,
});

/**
 * What {@link JobStore.answerInput} did:
 * - `answered`: the answer is stored (`job.input_received` `{ key }`); the job is `pending` again when it was
 *   the last open question, else still `input_required` on the others;
 * - `not_waiting`: the job is not `input_required` (nothing changed);
 * - `wrong_key`: no open question has that key (`request` is the first open one; nothing changed);
 * - `expired`: the earliest `expiresAt` of the open questions has passed (nothing changed; the job ends
 *   `failed` with `input_timeout` at the next {@link JobStore.expireInputs}; `request` is that question).
 */
export type InputAnswerOutcome =
  | { outcome: 'answered'; job: JobRecord; event: JobEvent }
  | { outcome: 'not_waiting'; job: JobRecord }
  | { outcome: 'wrong_key' | 'expired'; job: JobRecord; request: InputRequest };

/** What {@link JobStore.expireInputs} did: the `job.failed` events it wrote, and the next deadline left. */
export interface InputExpiry {
  ended: JobEvent[];
  /** The earliest `expiresAt` still open among jobs of the given types, or null: when to sweep again. */
  nextExpiresAt: number | null;
}

/** Most jobs one {@link JobStore.expireInputs} call ends (the rest at the next call, which comes at once). */
export const EXPIRE_INPUTS_BATCH = 100;

/** The error an expired question ends its job with (`input_timeout`, permanent, written for users). */
export function inputTimeoutError(request: InputRequest): {
  code: 'input_timeout';
  message: string;
  kind: 'permanent';
  userFacing: true;
} {
  const waited = request.expiresAt === null ? 0 : request.expiresAt - request.askedAt;
  return {
    code: 'input_timeout',
    message: `Nobody answered the job's question within ${waited} ms, so the job stopped.`,
    kind: 'permanent',
    userFacing: true,
  };
}

/**
 * The stored state in its current shape: a state written before a job could ask several questions at once
 * has `request` only (its one open question).
 */
export function inputOf(stored: Partial<JobInput> | null | undefined): JobInput {
  if (stored === null || stored === undefined) return NO_INPUT;
  const request = stored.request ?? null;
  const requests = stored.requests ?? (request === null ? [] : [request]);
  return {
    request: requests[0] ?? null,
    requests,
    answers: stored.answers ?? {},
    rounds: stored.rounds ?? 0,
  };
}

/** The open question that expires first (the job's deadline), or undefined when none expires. */
export function firstToExpire(requests: readonly InputRequest[]): InputRequest | undefined {
  let first: InputRequest | undefined;
  for (const request of requests) {
    if (request.expiresAt !== null && (first === undefined || request.expiresAt < first.expiresAt!))
      first = request;
  }
  return first;
}

/** The state after asking `requests` (one round): the answers kept, one more round. */
export function askedInput(current: JobInput, requests: readonly InputRequest[]): JobInput {
  return {
    request: requests[0] ?? null,
    requests: [...requests],
    answers: current.answers,
    rounds: current.rounds + 1,
  };
}

/** The state after answering the open question `key`: it is no longer open, its answer kept under its key. */
export function answeredInput(current: JobInput, key: string, answer: unknown): JobInput {
  const requests = current.requests.filter((request) => request.key !== key);
  return {
    request: requests[0] ?? null,
    requests,
    answers: { ...current.answers, [key]: answer },
    rounds: current.rounds,
  };
}

/** One question or several, as a list. */
export function requestsOf(request: InputRequest | readonly InputRequest[]): readonly InputRequest[] {
  return Array.isArray(request) ? (request as readonly InputRequest[]) : [request as InputRequest];
}

/** The `job.input_required` payload: `{ request }` (the first question), plus `requests` when several. */
export function inputRequiredPayload(input: JobInput): { request: InputRequest; requests?: InputRequest[] } {
  return input.requests.length > 1
    ? { request: input.request!, requests: input.requests }
    : { request: input.request! };
}

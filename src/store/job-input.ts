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

/** A job's input state: the open question (if any) and every answer given so far, by key. */
export interface JobInput {
  /** The question the job waits on while `input_required`, else null. */
  request: InputRequest | null;
  /** Answers by request key, as given to `JobStore.answerInput`; replayed to later runs. */
  answers: Record<string, unknown>;
  /** Questions asked so far (each one that put the job in `input_required`). */
  rounds: number;
}

/** The input state of a job that never asked anything. */
export const NO_INPUT: JobInput = Object.freeze({ request: null, answers: Object.freeze({}), rounds: 0 });

/**
 * What {@link JobStore.answerInput} did:
 * - `answered`: the answer is stored and the job is `pending` again (`job.input_received` `{ key }`);
 * - `not_waiting`: the job is not `input_required` (nothing changed);
 * - `wrong_key`: it waits on another key (`request` is the open question; nothing changed);
 * - `expired`: the question's `expiresAt` has passed (nothing changed; the job ends `failed` with
 *   `input_timeout` at the next {@link JobStore.expireInputs}).
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

/** The state after asking `request`: the answers kept, one more round. */
export function askedInput(current: JobInput, request: InputRequest): JobInput {
  return { request, answers: current.answers, rounds: current.rounds + 1 };
}

/** The state after answering the open question: no question, the answer kept under its key. */
export function answeredInput(current: JobInput, key: string, answer: unknown): JobInput {
  return { request: null, answers: { ...current.answers, [key]: answer }, rounds: current.rounds };
}

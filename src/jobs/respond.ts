import {
  BreakwaterError,
  INPUT_KEY_RULE,
  checkedJson,
  inputAnswerShapeProblem,
  isInputKey,
  type InputAnswer,
  type Principal,
} from '../core/index.js';
import type { InputRequest, InputSchema, JobRecord, JobStore } from '../store/index.js';
import { callerPrincipal, jobVisibleTo } from './access.js';
import { publicRecord } from './carrier.js';
import { INPUT_BOUNDS } from './input.js';
import { answerProblems } from './input-schema.js';

/** Options of `Jobs.respond`. */
export interface RespondOptions {
  /**
   * Who answers: only the job's owner, or a principal with `admin`, may
   * (docs/architecture.md#identity-and-ownership); anyone else gets `not_found`, as for a job that does not
   * exist. Default: the current `PrincipalContext`'s principal, and outside any (the application's own code)
   * every job.
   */
  principal?: Principal;
}

/**
 * Answers one question a job waits on (docs/jobs.md, "Asking for input"): what `Jobs.respond` does, over a
 * bare store, for fronts that hold the store rather than the runtime (the MCP tasks extension's
 * `tasks/update`). Checks who answers (`options.principal`: owner or `admin`), the key, the answer's size and
 * its schema, then stores the answer in one atomic store step that checks again that the job still waits on
 * that key (`JobStore.answerInput`), so a concurrent cancel, expiry or answer is never overwritten. Nothing is
 * stored when any check fails: the job keeps waiting on its question. Resolves the job: `pending` once no
 * question is left open, else still `input_required` on the others (`ctx.requestInputs`).
 * @throws BreakwaterError `not_found` (404: no such job, or `options.principal` may not see it);
 *   `input_not_awaited` (409, details `{ status, key?, keys? }`: not waiting, or `key` not open; `key` is the
 *   first open question, `keys` every open one when several);
 *   `invalid_payload` (400: bad key, not `{ action, content? }` (MCP `ElicitResult`), or an `accept` whose
 *   content does not fit the schema, details `{ problems }`);
 *   `payload_too_large` (413: past `INPUT_BOUNDS.maxAnswerBytes`); `input_timeout` (408: the question expired).
 */
export async function respondToJob(
  store: JobStore,
  id: string,
  key: string,
  answer: unknown,
  options: RespondOptions = {},
): Promise<JobRecord> {
  const job = jobVisibleTo(callerPrincipal(options.principal), await store.get(id));
  if (job === undefined) throw notFound(id);
  if (!isInputKey(key)) {
    throw new BreakwaterError('invalid_payload', { message: `The key must be ${INPUT_KEY_RULE}.` });
  }
  const text = checkedJson(answer);
  if (Buffer.byteLength(text) > INPUT_BOUNDS.maxAnswerBytes) {
    throw new BreakwaterError('payload_too_large', {
      message: `The answer is larger than ${INPUT_BOUNDS.maxAnswerBytes} bytes of JSON.`,
      details: { max_bytes: INPUT_BOUNDS.maxAnswerBytes },
    });
  }
  const value: unknown = JSON.parse(text);
  const shape = inputAnswerShapeProblem(value);
  if (shape !== undefined) {
    throw new BreakwaterError('invalid_payload', {
      message: `The answer must be { action: 'accept' | 'decline' | 'cancel', content? }: ${shape}.`,
      details: { problems: [shape] },
    });
  }
  const open = (await store.jobInput(id))?.requests ?? [];
  if (job.status !== 'input_required' || open.length === 0) throw notAwaited(job, []);
  const request = open.find((question) => question.key === key);
  if (request === undefined) throw notAwaited(job, open);
  const { action, content } = value as InputAnswer;
  if (action === 'accept') {
    const problems = answerProblems(request.schema ?? NO_FIELDS, content ?? {});
    if (problems.length > 0) {
      throw new BreakwaterError('invalid_payload', {
        message: `The answer does not fit the question's schema: ${problems.join('; ')}.`,
        details: { problems },
      });
    }
  }
  const outcome = await store.answerInput(id, key, value);
  if (outcome === undefined) throw notFound(id);
  switch (outcome.outcome) {
    case 'answered':
      return publicRecord(outcome.job);
    case 'expired':
      throw new BreakwaterError('input_timeout', {
        message: `The question of job ${id} expired before it was answered; the job stops.`,
      });
    case 'wrong_key':
      throw notAwaited(outcome.job, (await store.jobInput(id))?.requests ?? [outcome.request]);
    default:
      throw notAwaited(outcome.job, []);
  }
}

/** The schema of a question asked without one (a yes/no): an `accept` carries no fields. */
const NO_FIELDS = { type: 'object', properties: {} } as const satisfies InputSchema;

function notFound(id: string): BreakwaterError {
  return new BreakwaterError('not_found', { message: `There is no job ${id}.` });
}

/**
 * `input_not_awaited` with what the job does wait on: details `{ status, key?, keys? }` (`key`: the first open
 * question; `keys`: every open one, when several).
 */
function notAwaited(job: JobRecord, open: readonly InputRequest[]): BreakwaterError {
  const request = open[0];
  if (request === undefined) {
    return new BreakwaterError('input_not_awaited', {
      message: `Job ${job.id} is not waiting for input (it is ${job.status}).`,
      details: { status: job.status },
    });
  }
  if (open.length > 1) {
    const keys = open.map((question) => question.key);
    return new BreakwaterError('input_not_awaited', {
      message: `Job ${job.id} waits for the answers to questions ${keys.map((k) => JSON.stringify(k)).join(', ')}, not this one.`,
      details: { status: job.status, key: request.key, keys },
    });
  }
  return new BreakwaterError('input_not_awaited', {
    message: `Job ${job.id} waits for the answer to question ${JSON.stringify(request.key)}, not this one.`,
    details: { status: job.status, key: request.key },
  });
}

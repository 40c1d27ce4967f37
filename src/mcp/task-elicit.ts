import { isBreakwaterError } from '../core/index.js';
import type { JobEvent, InputRequest } from '../store/index.js';
import type { JobToolDeps } from './job-tools.js';
import { callerPrincipal } from '../jobs/index.js';

/**
 * Asks the user a job's questions while a 2025-11-25 client waits on `tasks/result` (MCP 2025-11-25, "Tasks":
 * a task in `input_required` sends its requests to the client with the related-task metadata, and the
 * client's answers go back to the task). `elicit` sends one question as an `elicitation/create` request on
 * the `tasks/result` stream; each answer is stored with `Jobs.respond` for the current principal (the job's
 * owner or `admin`, docs/architecture.md#identity-and-ownership).
 */
export type ElicitQuestion = (question: InputRequest, signal: AbortSignal) => Promise<unknown>;

/**
 * Resolves when the job behind `taskId` has ended; meanwhile each time it is `input_required`, every open
 * question not yet sent in this wait is sent with `elicit`, all at once, and each answer stored. A question
 * is sent at most once per wait: an answer `Jobs.respond` refuses (it does not fit the schema, the question
 * expired or was answered elsewhere meanwhile) leaves it to the other ways to answer (`respond_to_job`),
 * and so does a client that fails the request. Rejects with `signal`'s reason when it aborts first.
 */
export function waitAnswering(
  deps: Pick<JobToolDeps, 'jobs' | 'store'>,
  taskId: string,
  signal: AbortSignal,
  elicit: ElicitQuestion,
): Promise<void> {
  const principal = callerPrincipal();
  const sent = new Set<string>();
  let asking = Promise.resolve();

  const askOpen = async (): Promise<void> => {
    const job = await deps.store.get(taskId);
    if (job?.status !== 'input_required' || signal.aborted) return;
    const open = ((await deps.store.jobInput(taskId))?.requests ?? []).filter(
      (question) => !sent.has(`${question.key}@${question.askedAt}`),
    );
    await Promise.all(
      open.map(async (question) => {
        sent.add(`${question.key}@${question.askedAt}`);
        let answer: unknown;
        try {
          answer = await elicit(question, signal);
        } catch {
          return; // the client could not answer: the question stays open
        }
        try {
          await deps.jobs.respond(taskId, question.key, answer, { principal });
        } catch (error) {
          if (!isBreakwaterError(error)) throw error;
        }
      }),
    );
  };

  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      subscription.dispose();
      reject(signal.reason);
    };
    const onEvent = (event: JobEvent): void => {
      if (event.type !== 'job.input_required') return;
      asking = asking.then(askOpen).catch(() => undefined);
    };
    const subscription = deps.jobs.subscribe(taskId, 0, onEvent, {
      onEnd: () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
    });
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

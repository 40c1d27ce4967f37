import {
  BreakwaterError,
  INPUT_KEY_RULE,
  isInputKey,
  type Clock,
  type InputAnswer,
  type InputQuestion,
} from '../core/index.js';
import type { InputRequest, JobInput, JobRecord, JobStore } from '../store/index.js';
import { schemaProblem } from './input-schema.js';

/**
 * `ctx.requestInput` by durable replay (docs/jobs.md, "Asking for input"). A run that asks a question with
 * no stored answer stops there: `requestInput` throws {@link InputRequested}, the run (run.ts) recognises it
 * and parks the job (`JobStore.askInput`) instead of failing it, and the handler's promise is abandoned. Once
 * answered, the job runs again from the start and each `requestInput` whose key has an answer returns it at
 * once, so the handler reaches the question after it (or its end).
 */

/** Bounds of input during a job; `maxRounds` is the default of `DefineJobOptions.maxInputRounds`. */
export const INPUT_BOUNDS = {
  /** Questions one job may ask in all (each one that parked it). */
  maxRounds: 10,
  /** Longest answer: UTF-8 bytes of its JSON. */
  maxAnswerBytes: 65_536,
  /** Longest question, in UTF-16 code units. */
  maxMessageLength: 2_000,
  /** Longest `timeoutMs` of a question: 30 days. */
  maxTimeoutMs: 2_592_000_000,
  /** Most questions one `ctx.requestInputs` asks at once (as a synchronous call's `requestInputs`). */
  maxQuestionsPerRound: 16,
} as const;

/**
 * What a handler asks with `ctx.requestInput` (see `JobContext.requestInput`): the same form question as a
 * synchronous call's `ctx.requestInput` (`message`; `schema`, the fields of an `accept`'s `content`, default
 * none; `key`, 1..64 of `A-Za-z0-9_.:-`, default the call's ordinal in the run), plus how long to wait.
 */
export interface RequestInputOptions extends InputQuestion {
  /**
   * How long to wait for the answer, ms (integer in 1..30 days): unanswered by then, the job ends `failed`
   * with `input_timeout`. Default: no limit (until answered or canceled).
   */
  timeoutMs?: number;
}

/**
 * One entry of `ctx.requestInputs` (see `JobContext.requestInputs`): a {@link RequestInputOptions} without
 * `key`, as the map's key names the question.
 */
export type RequestInputsQuestion = Omit<RequestInputOptions, 'key'>;

export type { InputAnswer, InputQuestion };

/**
 * Thrown by `ctx.requestInput` when the question has no stored answer: the run ends by parking the job. A
 * handler must let it pass (a `catch` that swallows it changes nothing: the run still parks, and what the
 * handler returned after it is dropped).
 */
export class InputRequested extends Error {
  constructor(readonly requests: readonly InputRequest[]) {
    super(`The job asked for input (${requests.map((r) => r.key).join(', ')}) and waits for the answers.`);
    this.name = 'InputRequested';
  }
}

/** One run's questions: the answers read once, the ordinal of each call, the questions the run stopped on. */
export class InputReplay {
  /** The questions this run stopped on (all open at once), once a call threw {@link InputRequested}. */
  asked: InputRequest[] | undefined;
  private ordinal = 0;
  private state: Promise<JobInput> | undefined;

  constructor(
    private readonly deps: { store: JobStore; clock: Clock },
    private readonly job: JobRecord,
    private readonly maxRounds: number,
  ) {}

  /**
   * `ctx.requestInput`: the stored answer of the question's key, else the question is recorded and
   * {@link InputRequested} thrown.
   * @throws BreakwaterError `invalid_payload` (permanent: the run fails) for bad options, a job with an
   *   ordering key (waiting would let the jobs behind it run first), or more than `maxInputRounds` questions.
   */
  async request(options: RequestInputOptions): Promise<InputAnswer> {
    const ordinal = this.ordinal++;
    const problem = optionsProblem(options);
    if (problem !== undefined) throw invalid(`ctx.requestInput: ${problem}.`);
    const key = options.key ?? String(ordinal);
    return (await this.ask([[key, options]]))[key]!;
  }

  /**
   * `ctx.requestInputs`: the stored answers of every key, else each unanswered one is recorded (all open at
   * once, one round) and {@link InputRequested} thrown. Takes one ordinal, as one `requestInput` call.
   * @throws BreakwaterError `invalid_payload` as {@link request}, and for no question, more than
   *   `INPUT_BOUNDS.maxQuestionsPerRound`, or a key that breaks the key rule.
   */
  async requestMany(questions: Record<string, RequestInputsQuestion>): Promise<Record<string, InputAnswer>> {
    this.ordinal++;
    if (typeof questions !== 'object' || questions === null || Array.isArray(questions)) {
      throw invalid('ctx.requestInputs takes an object of questions by key.');
    }
    const entries = Object.entries(questions);
    if (entries.length === 0 || entries.length > INPUT_BOUNDS.maxQuestionsPerRound) {
      throw invalid(`ctx.requestInputs asks 1..${INPUT_BOUNDS.maxQuestionsPerRound} questions at once.`);
    }
    for (const [key, question] of entries) {
      if (!isInputKey(key))
        throw invalid(`ctx.requestInputs: key ${JSON.stringify(key)} must be ${INPUT_KEY_RULE}.`);
      const problem = optionsProblem(question);
      if (problem !== undefined) throw invalid(`ctx.requestInputs: ${key}: ${problem}.`);
    }
    return this.ask(entries);
  }

  /** The stored answers of `questions`, else the unanswered ones recorded and {@link InputRequested} thrown. */
  private async ask(
    questions: readonly (readonly [string, RequestInputsQuestion])[],
  ): Promise<Record<string, InputAnswer>> {
    if (this.asked !== undefined) throw new InputRequested(this.asked);
    const input = await (this.state ??= this.load());
    if (this.asked !== undefined) throw new InputRequested(this.asked);
    const answers: Record<string, InputAnswer> = {};
    const open = questions.filter(([key]) => {
      if (!Object.hasOwn(input.answers, key)) return true;
      answers[key] = input.answers[key] as InputAnswer;
      return false;
    });
    if (open.length === 0) return answers;
    if (this.job.orderingKey !== null) {
      throw invalid(
        'A job with an ordering key cannot ask for input: while it waited, the jobs behind it would run first.',
      );
    }
    if (input.rounds >= this.maxRounds) {
      throw invalid(`The job asked ${input.rounds} questions already, the most its type allows.`, {
        max_input_rounds: this.maxRounds,
      });
    }
    const now = this.deps.clock.now();
    this.asked = open.map(([key, question]) => ({
      key,
      message: question.message,
      schema: question.schema ?? null,
      askedAt: now,
      expiresAt: question.timeoutMs === undefined ? null : now + question.timeoutMs,
    }));
    throw new InputRequested(this.asked);
  }

  private async load(): Promise<JobInput> {
    const input = await this.deps.store.jobInput(this.job.id);
    if (input === undefined)
      throw new BreakwaterError('not_found', { message: `There is no job ${this.job.id}.` });
    return input;
  }
}

function optionsProblem(options: RequestInputOptions | RequestInputsQuestion): string | undefined {
  if (typeof options !== 'object' || options === null) return 'options must be an object';
  const { message, schema, key, timeoutMs } = options as RequestInputOptions;
  if (typeof message !== 'string' || message.length === 0 || message.length > INPUT_BOUNDS.maxMessageLength) {
    return `message must be a string of 1..${INPUT_BOUNDS.maxMessageLength} characters`;
  }
  if (key !== undefined && !isInputKey(key)) return `key must be ${INPUT_KEY_RULE}`;
  if (
    timeoutMs !== undefined &&
    !(Number.isInteger(timeoutMs) && timeoutMs > 0 && timeoutMs <= INPUT_BOUNDS.maxTimeoutMs)
  ) {
    return `timeoutMs must be an integer in 1..${INPUT_BOUNDS.maxTimeoutMs}`;
  }
  return schema === undefined ? undefined : schemaProblem(schema);
}

function invalid(message: string, details?: Record<string, unknown>): BreakwaterError {
  return new BreakwaterError('invalid_payload', { message, ...(details && { details }) });
}

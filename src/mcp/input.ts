/**
 * Asking the user during a synchronous call (docs/mcp.md#asking-the-user-during-a-call), for both protocol
 * eras, behind one handler API: `ctx.requestInput` (one form question) and `ctx.requestInputs` (several
 * questions, sampling and roots at once).
 *
 * - 2026-07-28 (multi round-trip requests, MCP "mrtr"): an {@link InputRound} per request. The handler runs
 *   again on every round with every answer so far (replay); a question without an answer stops the run with
 *   {@link InputRequiredSignal}, and the call answers `input_required` with every question gathered; answers
 *   of earlier rounds travel in the signed `requestState` (sealed by `sdk-v2.ts`).
 * - 2025 revisions (sessions): a channel of `sdk.ts` sends real `elicitation/create`, `sampling/createMessage`
 *   and `roots/list` requests to the client while the call waits, under the call's deadline.
 *
 * Nothing here imports an SDK.
 */
import {
  BreakwaterError,
  INPUT_KEY_RULE,
  isInputKey,
  type InputAnswer,
  type InputQuestion,
  type InputSchema,
} from '../core/index.js';
import { McpProtocolError, RPC } from './types.js';

/**
 * Bounds of one call's questions: rounds of `input_required` answers per call (a client that keeps sending
 * wrong answers stops there), questions per round, and JSON characters of the answers carried in
 * `requestState`.
 */
export const INPUT_BOUNDS = { maxRounds: 8, maxRequestsPerRound: 16, maxStateChars: 65_536 } as const;

export type { InputAnswer, InputQuestion, InputSchema };

/** A sampling request (MCP `sampling/createMessage` params): at least `messages` and `maxTokens`. */
export interface SamplingRequest {
  messages: { role: 'user' | 'assistant'; content: unknown }[];
  maxTokens: number;
  [field: string]: unknown;
}

/** The client's sampling answer (MCP `CreateMessageResult`). */
export interface SamplingAnswer {
  role: 'user' | 'assistant';
  content: unknown;
  model: string;
  stopReason?: string;
  [field: string]: unknown;
}

/** The client's roots (MCP `ListRootsResult`). */
export interface RootsAnswer {
  roots: { uri: string; name?: string }[];
}

/** One entry of {@link InputContext.requestInputs}: a form question, a sampling request, or the roots. */
export type InputAsk = Omit<InputQuestion, 'key'> | { sampling: SamplingRequest } | { roots: true };

/** The answer type of an {@link InputAsk}. */
export type InputAnswerOf<A> = A extends { sampling: SamplingRequest }
  ? SamplingAnswer
  : A extends { roots: true }
    ? RootsAnswer
    : InputAnswer;

/** Which kinds of question the client declared it can answer (its `elicitation`, `sampling`, `roots`). */
export interface InputSupport {
  readonly elicitation: boolean;
  readonly sampling: boolean;
  readonly roots: boolean;
}

/** What a tool handler, a prompt's `get` and a resource's `read` get to ask the user. */
export interface InputContext {
  /** The kinds the caller's client can answer; ask only for those (others fail with `input_unavailable`). */
  readonly inputSupport: InputSupport;
  /**
   * Asks the user one form question and resolves with the answer. On 2026-07-28 the handler runs again from
   * the start on each round (code before the question runs again: keep it free of effects, or guard them);
   * on the 2025 revisions the client is asked while the call waits, within its deadline.
   * @throws BreakwaterError `input_unavailable` when the client cannot answer form questions, or refused.
   * @throws BreakwaterError `invalid_payload` when a 2025 client's answer does not fit the schema.
   * @throws TypeError for a malformed question (empty message, bad key, a schema that is not an object).
   */
  requestInput(question: InputQuestion): Promise<InputAnswer>;
  /**
   * Asks several at once, in one round, keyed by the map's keys (each a question key, see
   * {@link InputQuestion.key}): `{ name: { message, schema }, draft: { sampling }, where: { roots: true } }`.
   * Errors as {@link requestInput}; more than 16 at once is a TypeError.
   */
  requestInputs<R extends Record<string, InputAsk>>(
    asks: R,
  ): Promise<{ [K in keyof R]: InputAnswerOf<R[K]> }>;
}

/** The client requests of the wire (`inputRequests` entries; the 2025 server-to-client requests). */
export interface WireInputRequest {
  method: 'elicitation/create' | 'sampling/createMessage' | 'roots/list';
  params: Record<string, unknown>;
}

/** How an era gets answers: {@link InputRound} on 2026-07-28, a session channel on 2025. */
export interface InputChannel {
  readonly support: InputSupport;
  /** Answers for `requests` by key; every answer is checked by the caller with {@link answerProblem}. */
  fulfil(requests: ReadonlyMap<string, WireInputRequest>, signal: AbortSignal): Promise<Map<string, unknown>>;
}

/** Stops a handler's run at a question without an answer (2026-07-28); the call answers `input_required`. */
export class InputRequiredSignal extends Error {
  constructor() {
    super('the call waits for input; its run stops here');
    this.name = 'InputRequiredSignal';
  }
}

/** What `requestState` carries (before sealing): the round it closed and the answers kept. */
export interface InputState {
  round: number;
  answers: Record<string, unknown>;
}

/** A call's answer when it waits for input: the questions, and the state to seal into `requestState`. */
export interface InputRequiredAnswer {
  resultType: 'input_required';
  inputRequests: Record<string, WireInputRequest>;
  state: InputState;
}

/** True for an {@link InputRequiredAnswer}. */
export function isInputRequiredAnswer(value: unknown): value is InputRequiredAnswer {
  return isObject(value) && value['resultType'] === 'input_required';
}

const NO_SUPPORT: InputSupport = { elicitation: false, sampling: false, roots: false };

/** The kinds a client declared, from its capabilities (form elicitation: `elicitation` without only `url`). */
export function inputSupportOf(capabilities: unknown): InputSupport {
  if (!isObject(capabilities)) return NO_SUPPORT;
  const elicitation = capabilities['elicitation'];
  const form =
    isObject(elicitation) && (elicitation['form'] !== undefined || elicitation['url'] === undefined);
  return {
    elicitation: form,
    sampling: isObject(capabilities['sampling']),
    roots: isObject(capabilities['roots']),
  };
}

/**
 * One 2026-07-28 request's answers: those of earlier rounds (from the verified `requestState`) and those the
 * request carries (`inputResponses`). An answer is used only when it fits its question (else the question is
 * asked again, the spec's SHOULD); answers to questions not asked are ignored.
 */
export class InputRound implements InputChannel {
  /** Questions asked in this run without a usable answer. */
  readonly pending = new Map<string, WireInputRequest>();
  /** A capability a question of this run needs and the request did not declare (the first one asked). */
  missing: keyof InputSupport | undefined;
  /** Answers used in this run, carried to the next round. */
  private readonly kept: Record<string, unknown> = {};

  constructor(
    readonly support: InputSupport,
    private readonly previous: InputState | undefined,
    private readonly responses: Record<string, unknown> | undefined,
  ) {}

  fulfil(requests: ReadonlyMap<string, WireInputRequest>): Promise<Map<string, unknown>> {
    const answers = new Map<string, unknown>();
    for (const [key, request] of requests) {
      // An answer accepted in an earlier round stands: a later response does not change it.
      const earlier = ownValue(this.previous?.answers, key);
      const given = earlier ?? ownValue(this.responses, key);
      if (given !== undefined && answerProblem(request, given) === undefined) {
        answers.set(key, given);
        this.kept[key] = given;
      } else this.pending.set(key, request);
    }
    if (this.pending.size > 0) return Promise.reject(new InputRequiredSignal());
    return Promise.resolve(answers);
  }

  /**
   * The `input_required` answer of a run that left questions pending, else undefined.
   * @throws BreakwaterError `input_unavailable` past {@link INPUT_BOUNDS.maxRounds} rounds, `payload_too_large`
   *   when the answers to carry exceed {@link INPUT_BOUNDS.maxStateChars}.
   * @throws TypeError when the run asked more than {@link INPUT_BOUNDS.maxRequestsPerRound} questions.
   */
  required(): InputRequiredAnswer | undefined {
    if (this.missing !== undefined) throw missingCapability(this.missing);
    if (this.pending.size === 0) return undefined;
    const round = (this.previous?.round ?? 0) + 1;
    if (round > INPUT_BOUNDS.maxRounds)
      throw new BreakwaterError('input_unavailable', {
        message: `The request asked for input more than ${INPUT_BOUNDS.maxRounds} times without getting what it needs, so it stopped.`,
      });
    if (this.pending.size > INPUT_BOUNDS.maxRequestsPerRound)
      throw new TypeError(`a round asks at most ${INPUT_BOUNDS.maxRequestsPerRound} questions`);
    const state: InputState = { round, answers: { ...this.kept } };
    if (JSON.stringify(state).length > INPUT_BOUNDS.maxStateChars)
      throw new BreakwaterError('payload_too_large', {
        message: `The answers gathered so far are larger than a request may carry (${INPUT_BOUNDS.maxStateChars} characters), so the request stopped.`,
      });
    return { resultType: 'input_required', inputRequests: Object.fromEntries(this.pending), state };
  }
}

/**
 * The `input_required` answer of a run over `channel`, when it is a round with questions pending (whatever
 * the run did with the signal: catching it does not make the question answered). Errors as
 * {@link InputRound.required}.
 */
export function inputRequiredOf(channel: InputChannel | undefined): InputRequiredAnswer | undefined {
  return channel instanceof InputRound ? channel.required() : undefined;
}

/** The {@link InputContext} of one run over `channel` (none: every question fails `input_unavailable`). */
export function inputContext(channel: InputChannel | undefined, signal: AbortSignal): InputContext {
  let ordinal = 0;
  const support = channel?.support ?? NO_SUPPORT;

  async function ask(requests: Map<string, WireInputRequest>): Promise<Map<string, unknown>> {
    if (requests.size > INPUT_BOUNDS.maxRequestsPerRound)
      throw new TypeError(`requestInputs asks at most ${INPUT_BOUNDS.maxRequestsPerRound} at once`);
    if (channel === undefined)
      throw new BreakwaterError('input_unavailable', {
        message: 'This request cannot ask the user anything: it is not a call that can wait for input.',
      });
    for (const request of requests.values()) {
      const kind = KIND[request.method];
      // 2026-07-28 (SEP-2575): a request that needs a capability its client did not declare is refused with
      // -32021, not answered; the round reports it once the run has stopped.
      if (!support[kind] && channel instanceof InputRound) {
        channel.missing ??= kind;
        throw new InputRequiredSignal();
      }
      if (!support[kind])
        throw new BreakwaterError('input_unavailable', {
          message: `The request needs input of a kind this client cannot give (${request.method}): it did not declare the ${kind} capability.`,
          details: { method: request.method },
        });
    }
    const answers = await channel.fulfil(requests, signal);
    for (const [key, request] of requests) {
      const problem = answers.has(key) ? answerProblem(request, answers.get(key)) : 'no answer';
      if (problem !== undefined)
        throw new BreakwaterError('invalid_payload', {
          message: `The client's answer to the question ${key} does not fit it: ${problem}.`,
        });
    }
    return answers;
  }

  return {
    inputSupport: support,
    async requestInput(question) {
      const key = question?.key ?? String(ordinal);
      ordinal++;
      const request = wireRequest(key, question);
      const answers = await ask(new Map([[key, request]]));
      return elicitAnswer(answers.get(key));
    },
    async requestInputs(asks) {
      if (!isObject(asks)) throw new TypeError('requestInputs takes an object of questions by key');
      const requests = new Map<string, WireInputRequest>();
      for (const [key, item] of Object.entries(asks)) requests.set(key, wireRequest(key, item));
      const answers = await ask(requests);
      const out: Record<string, unknown> = {};
      for (const [key, request] of requests) {
        const answer = answers.get(key);
        out[key] = request.method === 'elicitation/create' ? elicitAnswer(answer) : answer;
      }
      return out as never;
    },
  };
}

const KIND = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
} as const satisfies Record<WireInputRequest['method'], keyof InputSupport>;

/**
 * The wire request of one question.
 * @throws TypeError for a bad key, an empty message, a schema that is not `{ type: 'object', properties }`,
 *   a sampling request without `messages` or a positive integer `maxTokens`.
 */
function wireRequest(key: string, ask: unknown): WireInputRequest {
  if (!isInputKey(key))
    throw new TypeError(`a question key is ${INPUT_KEY_RULE} (got ${JSON.stringify(key)})`);
  if (!isObject(ask)) throw new TypeError(`question ${key} must be an object`);
  if (ask['roots'] === true) return { method: 'roots/list', params: {} };
  if (ask['sampling'] !== undefined) {
    const sampling = ask['sampling'];
    const ok =
      isObject(sampling) &&
      Array.isArray(sampling['messages']) &&
      sampling['messages'].length > 0 &&
      Number.isInteger(sampling['maxTokens']) &&
      (sampling['maxTokens'] as number) > 0;
    if (!ok) throw new TypeError(`sampling request ${key} needs messages and a positive integer maxTokens`);
    return { method: 'sampling/createMessage', params: { ...sampling } };
  }
  const message = ask['message'];
  if (typeof message !== 'string' || message.trim() === '')
    throw new TypeError(`question ${key} needs a non-empty message`);
  const schema = ask['schema'] ?? { type: 'object', properties: {} };
  if (!isObject(schema) || schema['type'] !== 'object' || !isObject(schema['properties']))
    throw new TypeError(`question ${key}: the schema must be { type: 'object', properties: { … } }`);
  return { method: 'elicitation/create', params: { message, requestedSchema: schema } };
}

/**
 * Why `answer` does not fit `request`, or undefined when it does: an elicitation result with a known action
 * whose accepted content has every required field with its property's type; a sampling result with a role,
 * content and model; roots with a `uri` each.
 */
export function answerProblem(request: WireInputRequest, answer: unknown): string | undefined {
  if (!isObject(answer)) return 'the answer is not an object';
  if (request.method === 'roots/list') {
    const roots = answer['roots'];
    return Array.isArray(roots) && roots.every((root) => isObject(root) && typeof root['uri'] === 'string')
      ? undefined
      : 'roots must be a list of { uri }';
  }
  if (request.method === 'sampling/createMessage') {
    const ok =
      (answer['role'] === 'assistant' || answer['role'] === 'user') &&
      (isObject(answer['content']) || Array.isArray(answer['content'])) &&
      typeof answer['model'] === 'string';
    return ok ? undefined : 'a sampling answer needs role, content and model';
  }
  const action = answer['action'];
  if (action === 'decline' || action === 'cancel') return undefined;
  if (action !== 'accept') return 'action must be accept, decline or cancel';
  const schema = request.params['requestedSchema'] as InputSchema;
  const content = answer['content'] ?? {};
  if (!isObject(content)) return 'content must be an object';
  for (const name of schema.required ?? []) if (content[name] === undefined) return `${name} is required`;
  for (const [name, value] of Object.entries(content)) {
    const property = schema.properties[name];
    if (property === undefined) return `${name} was not asked`;
    if (!fitsType(property['type'], value)) return `${name} must be of type ${String(property['type'])}`;
  }
  return undefined;
}

function fitsType(type: unknown, value: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value) && value.every((item) => typeof item === 'string');
    default:
      return true;
  }
}

/** The handler's view of an elicitation answer: its action and content only. */
function elicitAnswer(answer: unknown): InputAnswer {
  const { action, content } = answer as InputAnswer;
  return content === undefined || action !== 'accept' ? { action } : { action, content };
}

function ownValue(record: Record<string, unknown> | undefined, key: string): unknown {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The -32021 refusal of a 2026-07-28 request whose run asked for input of a kind its client did not declare
 * (SEP-2575 "Client Capabilities"): `data.requiredCapabilities` names it as a `ClientCapabilities` object.
 */
function missingCapability(kind: keyof InputSupport): McpProtocolError {
  return new McpProtocolError(
    RPC.missingClientCapability,
    `Missing required client capability: the request asks the user for input through ${kind}, which the client did not declare.`,
    { requiredCapabilities: { [kind]: {} } },
  );
}

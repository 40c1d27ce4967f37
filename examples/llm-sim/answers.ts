/**
 * The simulated provider's answers: deterministic text (the same request always gets the same words),
 * OpenAI chat completion objects and stream chunks, with `usage`.
 */

const WORDS = [
  'A',
  'thoughtful',
  'gift',
  'says',
  'you',
  'listened:',
  'pick',
  'something',
  'they',
  'mentioned',
  'once,',
  'wrap',
  'it',
  'with',
  'care,',
  'and',
  'add',
  'a',
  'short',
  'note.',
];

/** What an answer is made from. */
export interface AnswerPlan {
  id: string;
  created: number;
  model: string;
  /** One entry per completion token. */
  tokens: string[];
  promptTokens: number;
  cachedTokens: number;
  /** `length` when the token count was cut by `max_tokens`. */
  finishReason: 'stop' | 'length';
}

/** Token `i` of every answer (each word with its leading space, but the first). */
export function token(i: number): string {
  const word = WORDS[i % WORDS.length]!;
  return i === 0 ? word : ` ${word}`;
}

/**
 * Plans the answer to `body`: `max_completion_tokens` / `max_tokens` tokens when given, else
 * `defaultTokens`; prompt tokens are a quarter of the prompt's JSON bytes, rounded up.
 */
export function planAnswer(
  body: Record<string, unknown>,
  seq: number,
  defaultTokens: number,
  cachedTokens: number,
  fixedUsage: { promptTokens: number; completionTokens: number } | undefined,
): AnswerPlan {
  const max = body.max_completion_tokens ?? body.max_tokens;
  const count =
    fixedUsage?.completionTokens ?? (typeof max === 'number' && max >= 1 ? Math.floor(max) : defaultTokens);
  const promptTokens =
    fixedUsage?.promptTokens ??
    Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(body.messages ?? [])) / 4));
  return {
    id: `chatcmpl-sim-${seq}`,
    created: 1_767_225_600,
    model: typeof body.model === 'string' ? body.model : 'sim',
    tokens: Array.from({ length: count }, (_, i) => token(i)),
    promptTokens,
    cachedTokens: Math.min(cachedTokens, promptTokens),
    finishReason: typeof max === 'number' && fixedUsage === undefined ? 'length' : 'stop',
  };
}

/** The OpenAI `usage` object of a plan. */
export function usageOf(plan: AnswerPlan): Record<string, unknown> {
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: plan.tokens.length,
    total_tokens: plan.promptTokens + plan.tokens.length,
    prompt_tokens_details: { cached_tokens: plan.cachedTokens },
  };
}

/**
 * The non-streamed `chat.completion`. With `serviceMs`, an extension field `x_sim_service_ms` carries it
 * (see `reportServiceTime`).
 */
export function completion(plan: AnswerPlan, serviceMs?: number): string {
  return JSON.stringify({
    id: plan.id,
    object: 'chat.completion',
    created: plan.created,
    model: plan.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: plan.tokens.join(''), refusal: null },
        logprobs: null,
        finish_reason: plan.finishReason,
      },
    ],
    usage: usageOf(plan),
    ...(serviceMs === undefined ? {} : { x_sim_service_ms: serviceMs }),
  });
}

/**
 * The SSE frames of a streamed answer: a role chunk, one chunk per token, the finish chunk, the usage chunk
 * (`choices: []`) when `includeUsage`, and `data: [DONE]`. With `includeUsage` every other chunk carries
 * `"usage": null`, as OpenAI's do.
 */
export function streamFrames(plan: AnswerPlan, includeUsage: boolean): string[] {
  const chunk = (choices: unknown[], usage?: unknown): string => {
    const body: Record<string, unknown> = {
      id: plan.id,
      object: 'chat.completion.chunk',
      created: plan.created,
      model: plan.model,
      choices,
    };
    if (includeUsage) body.usage = usage ?? null;
    return `data: ${JSON.stringify(body)}\n\n`;
  };
  const frames = [
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]),
  ];
  for (const t of plan.tokens) {
    frames.push(chunk([{ index: 0, delta: { content: t }, logprobs: null, finish_reason: null }]));
  }
  frames.push(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: plan.finishReason }]));
  if (includeUsage) frames.push(chunk([], usageOf(plan)));
  frames.push('data: [DONE]\n\n');
  return frames;
}

/** An OpenAI-shaped error body. */
export function errorBody(message: string, type: string, code: string | null): string {
  return JSON.stringify({ error: { message, type, param: null, code } });
}

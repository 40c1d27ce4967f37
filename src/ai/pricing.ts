/**
 * Prices and costs. Prices are USD per million tokens; inside, each is held as an integer number of
 * pico-USD (1e-12 USD) per token, so a cost is an exact integer sum (no float drift however many requests are
 * added up) and its decimal form is exact. Spend counters hold micro-USD (1e-6 USD): a cost is rounded UP to
 * whole micro-USD there, so rounding never lets spend creep past a budget.
 */
import type { Usage } from './types.js';

/** A model's prices, USD per million tokens. */
export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
  /** Price of prompt tokens served from the provider's cache (default: `inputPerMTok`). */
  cachedInputPerMTok?: number;
}

/** Prices by `<provider>/<model>`. */
export type PriceTableInput = Readonly<Record<string, ModelPrice>>;

/** One model's prices in pico-USD per token (integers). */
export interface TokenPrice {
  readonly inputPico: number;
  readonly outputPico: number;
  readonly cachedPico: number;
}

/** Pico-USD per micro-USD. */
const PICO_PER_MICRO = 1_000_000;

/**
 * USD per million tokens → pico-USD per token: the same number times 10^6. Prices are read to 6 decimals
 * (0.000001 USD per million tokens), which every real price list fits.
 */
export function picoPerToken(usdPerMTok: number): number {
  return Math.round(usdPerMTok * 1_000_000);
}

/** The gateway's price table: `price('<provider>/<model>')`. */
export class PriceTable {
  private readonly prices = new Map<string, TokenPrice>();

  /** @param table already validated (non-negative finite numbers). */
  constructor(table: PriceTableInput = {}) {
    for (const [key, price] of Object.entries(table)) {
      const inputPico = picoPerToken(price.inputPerMTok);
      this.prices.set(key, {
        inputPico,
        outputPico: picoPerToken(price.outputPerMTok),
        cachedPico:
          price.cachedInputPerMTok === undefined ? inputPico : picoPerToken(price.cachedInputPerMTok),
      });
    }
  }

  /** The price of `provider`/`model`, or undefined when the table has none. */
  price(provider: string, model: string): TokenPrice | undefined {
    return this.prices.get(`${provider}/${model}`);
  }
}

/**
 * The exact cost of `usage` at `price`, in pico-USD: uncached prompt tokens at the input price, cached ones
 * at the cached price, completion tokens at the output price. (Reasoning tokens are part of
 * `completion_tokens` in the OpenAI usage shape, so they are counted there.)
 */
export function costPico(usage: Usage, price: TokenPrice): number {
  const cached = Math.min(usage.cachedTokens, usage.promptTokens);
  return (
    (usage.promptTokens - cached) * price.inputPico +
    cached * price.cachedPico +
    usage.completionTokens * price.outputPico
  );
}

/** Pico-USD → micro-USD, rounded up. */
export function picoToMicro(pico: number): number {
  return Math.ceil(pico / PICO_PER_MICRO);
}

/** USD (a finite number >= 0, as configured) → micro-USD, rounded down (a budget never grows by rounding). */
export function usdToMicro(usd: number): number {
  return Math.floor(Math.round(usd * 1e12) / PICO_PER_MICRO);
}

/** Pico-USD as an exact decimal USD string: 150000 → `0.00000015`, 2_000_000_000_000 → `2`. */
export function formatUsd(pico: number): string {
  const digits = String(Math.round(pico)).padStart(13, '0');
  const whole = digits.slice(0, -12);
  const fraction = digits.slice(-12).replace(/0+$/, '');
  return fraction === '' ? whole : `${whole}.${fraction}`;
}

/** Micro-USD as an exact decimal USD string. */
export function formatMicroUsd(micro: number): string {
  return formatUsd(micro * PICO_PER_MICRO);
}

/** What an estimate is made from. */
export interface EstimateInput {
  /** The request's `max_completion_tokens` or `max_tokens`, when it has one. */
  maxOutputTokens: number | undefined;
  /** UTF-8 bytes of the request's `messages` (and `tools`), serialized. */
  promptBytes: number;
  /** Messages in the request (each costs a few tokens of framing). */
  messageCount: number;
  /** Answers asked for: the request's `n` (default 1). Each can be as long as the maximum output. */
  answers?: number;
}

/** Tokens of framing per message in OpenAI's chat format (role, separators), counted generously. */
const TOKENS_PER_MESSAGE = 4;
/** Tokens that prime every answer. */
const TOKENS_PER_ANSWER = 3;

/**
 * An upper bound of a request's cost in micro-USD, for the spend reservation:
 * - input: one token per byte of the serialized prompt (a BPE token is never less than one byte of text) plus
 *   framing, at the dearer of the input and cached prices;
 * - output: `max_completion_tokens` / `max_tokens` at the output price, once per answer (`n`: OpenAI bills the
 *   prompt once and every choice's tokens).
 * Without a maximum output, `ceilingMicroUsd` (the configured per-request ceiling) per answer is the
 * estimate; undefined when there is none either (the caller refuses the request).
 *
 * Not bounded: images, audio and files, whose token counts do not follow their bytes; a request that uses
 * them can cost more than its estimate.
 */
export function estimateMicroUsd(
  input: EstimateInput,
  price: TokenPrice,
  ceilingMicroUsd: number | undefined,
): number | undefined {
  const answers = input.answers ?? 1;
  if (input.maxOutputTokens === undefined) {
    return ceilingMicroUsd === undefined ? undefined : ceilingMicroUsd * answers;
  }
  const promptTokens = input.promptBytes + input.messageCount * TOKENS_PER_MESSAGE + TOKENS_PER_ANSWER;
  const pico =
    promptTokens * Math.max(price.inputPico, price.cachedPico) +
    answers * input.maxOutputTokens * price.outputPico;
  return picoToMicro(pico);
}

/** Bytes of text per token assumed by {@link producedMicroUsd}: the usual rule of thumb for English text. */
export const BYTES_PER_TOKEN = 4;

/**
 * The cost of what a stream produced when its provider never sent `usage` (its client left, or the provider
 * broke off, before the usage chunk), micro-USD rounded up:
 * - prompt: ceil(`promptBytes` / 4) tokens at the dearer of the input and cached prices (the provider read the
 *   whole prompt);
 * - completion: ceil(`textBytes` / 4) tokens at the output price, `textBytes` being the UTF-8 bytes of the
 *   text the stream carried (content, reasoning, refusals, tool call arguments: stream/text-bytes.ts).
 *
 * Its bounds: a BPE token is at least one byte, so the real completion count is at most 4 times this one
 * (text of short tokens: CJK, code, digits), and about this one for English prose; tokens the provider
 * generated and never streamed (hidden reasoning) or had not yet sent are not seen. The caller caps it at the
 * reservation, which stays the upper bound.
 */
export function producedMicroUsd(promptBytes: number, textBytes: number, price: TokenPrice): number {
  const promptTokens = Math.ceil(promptBytes / BYTES_PER_TOKEN);
  const completionTokens = Math.ceil(textBytes / BYTES_PER_TOKEN);
  return picoToMicro(
    promptTokens * Math.max(price.inputPico, price.cachedPico) + completionTokens * price.outputPico,
  );
}

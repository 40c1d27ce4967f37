import { BreakwaterError, sentenceFor } from '../core/index.js';

/** The states in which a breaker rejects calls. */
export type RejectingState = 'open' | 'half-open' | 'isolated';

const DETAILS = {
  open: Object.freeze({ circuit_state: 'open' }),
  'half-open': Object.freeze({ circuit_state: 'half-open' }),
  isolated: Object.freeze({ circuit_state: 'isolated' }),
} as const;

/** Prefix of core's generic `circuit_open` sentence, replaced by the dependency's name. */
const GENERIC_SUBJECT = 'The service';

/**
 * Builds a breaker's `circuit_open` rejections cheaply enough for a storm of calls to a dead dependency:
 * no stack trace unless asked (it would only point into the breaker), and a sentence rebuilt only when its
 * whole number of seconds changes (the precision it has). Each rejection is a fresh object: callers and
 * middleware may annotate errors, and one request's data must never show up in another's.
 */
export class RejectionErrors {
  private messageKey = NaN;
  private message = '';

  /**
   * @param name `source` of the errors
   * @param subject the dependency's name used in sentences ("gift-service is temporarily unavailable…"),
   *   or undefined for core's generic "The service…"
   */
  constructor(
    private readonly name: string,
    private readonly subject: string | undefined,
    private readonly captureStack: boolean,
  ) {}

  get(state: RejectingState, retryAfterMs: number | undefined): BreakwaterError {
    const options = {
      message: this.messageFor(retryAfterMs),
      retryAfterMs,
      source: this.name,
      details: DETAILS[state],
    };
    return this.captureStack
      ? new BreakwaterError('circuit_open', options)
      : BreakwaterError.withoutStack('circuit_open', options);
  }

  private messageFor(retryAfterMs: number | undefined): string {
    if (retryAfterMs === undefined) {
      return `${this.subject ?? GENERIC_SUBJECT} is temporarily unavailable: it was isolated by an operator.`;
    }
    const key = Math.ceil(retryAfterMs / 1000);
    if (key !== this.messageKey) {
      const sentence = sentenceFor('circuit_open', retryAfterMs);
      this.message =
        this.subject !== undefined && sentence.startsWith(GENERIC_SUBJECT)
          ? this.subject + sentence.slice(GENERIC_SUBJECT.length)
          : sentence;
      this.messageKey = key;
    }
    return this.message;
  }
}

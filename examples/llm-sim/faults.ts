/**
 * The simulated provider's behaviour switches, changeable at run time (in process through
 * `provider.faults`, or over HTTP at `/_faults`), in the manner of GiftGenius's services/faults.ts.
 */
import { HangGate } from '../shared/hang.js';

/** How the simulated provider behaves. */
export interface SimBehaviour {
  /** Ms before anything happens (network and queueing), 0..600 000. */
  latencyMs: number;
  /**
   * Up to this many ms more per request, drawn uniformly (0..600 000; 0: every request waits exactly
   * `latencyMs`). Real providers' latency varies; without it, clients that all wait the same time stay in
   * lockstep and arrive in bursts.
   */
  jitterMs: number;
  /** Further ms until the first byte of the answer (headers and first chunk go out together), 0..600 000. */
  firstByteMs: number;
  /** Streamed tokens per second after the first byte; 0 = all at once. Non-streamed answers wait for them too. */
  tokensPerSecond: number;
  /** Share of requests (0..1) answered 503 `server_error`. */
  errorRate: number;
  /** Every `every`-th request (the 1st, the (every+1)-th, …; default 1: all) is answered 429 with `Retry-After: retryAfterS`. Null: off. */
  rateLimit429: { every: number; retryAfterS: number } | null;
  /** Requests wait without an answer until `hang` is switched off (then answered) or the provider closes. */
  hang: boolean;
  /** The answer breaks off halfway: the socket is destroyed after half the tokens (or half the JSON body). */
  cutMidStream: boolean;
}

/** Settings as given to `set` / `PUT /_faults` (left out: off) or `patch` / `PATCH /_faults` (left out: kept). */
export type SimSettings = Partial<Omit<SimBehaviour, 'rateLimit429'>> & {
  rateLimit429?: { every?: number; retryAfterS: number } | null;
};

/** Nothing slow, nothing failing. */
export const NORMAL: Readonly<SimBehaviour> = Object.freeze({
  latencyMs: 0,
  jitterMs: 0,
  firstByteMs: 0,
  tokensPerSecond: 0,
  errorRate: 0,
  rateLimit429: null,
  hang: false,
  cutMidStream: false,
});

const MAX_MS = 600_000;

/**
 * Reads untrusted settings over `base` (fields left out keep `base`'s value).
 * @throws RangeError naming the field when a value is out of range, of the wrong type or unknown.
 */
export function parseSettings(input: unknown, base: SimBehaviour = NORMAL): SimBehaviour {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new RangeError('Simulator settings must be a JSON object.');
  }
  const s = input as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    if (!(key in NORMAL))
      throw new RangeError(`Unknown setting "${key}"; known: ${Object.keys(NORMAL).join(', ')}.`);
  }
  const out: SimBehaviour = { ...base };
  for (const key of ['latencyMs', 'jitterMs', 'firstByteMs'] as const) {
    if (s[key] === undefined) continue;
    out[key] = number(key, s[key], 0, MAX_MS);
  }
  if (s.tokensPerSecond !== undefined)
    out.tokensPerSecond = number('tokensPerSecond', s.tokensPerSecond, 0, 1e6);
  if (s.errorRate !== undefined) out.errorRate = number('errorRate', s.errorRate, 0, 1);
  for (const key of ['hang', 'cutMidStream'] as const) {
    if (s[key] === undefined) continue;
    if (typeof s[key] !== 'boolean') throw new RangeError(`${key} must be true or false.`);
    out[key] = s[key];
  }
  if (s.rateLimit429 !== undefined) {
    const r = s.rateLimit429 as { every?: unknown; retryAfterS?: unknown } | null;
    if (r === null) out.rateLimit429 = null;
    else if (typeof r !== 'object')
      throw new RangeError('rateLimit429 must be { every?, retryAfterS } or null.');
    else {
      const every = r.every === undefined ? 1 : number('rateLimit429.every', r.every, 1, 1e9);
      if (!Number.isInteger(every)) throw new RangeError('rateLimit429.every must be an integer >= 1.');
      out.rateLimit429 = { every, retryAfterS: number('rateLimit429.retryAfterS', r.retryAfterS, 0, 86_400) };
    }
  }
  return out;
}

function number(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !(value >= min && value <= max)) {
    throw new RangeError(`${name} must be a number from ${min} to ${max}.`);
  }
  return value;
}

/** The run-time switch. */
export interface SimSwitch {
  /** Replaces the behaviour (fields left out: off, like PUT). Switching `hang` off releases hanging requests. */
  set(settings: SimSettings): SimBehaviour;
  /** Changes only the fields given (like PATCH). */
  patch(settings: SimSettings): SimBehaviour;
  /** Back to normal, releasing hanging requests. */
  clear(): SimBehaviour;
  /** The current behaviour (a copy). */
  get(): SimBehaviour;
  /** Requests hanging right now. */
  hanging(): number;
}

/** The behaviour state and the hang waits. */
export class SimController implements SimSwitch {
  private behaviour: SimBehaviour;
  private readonly gate = new HangGate();

  constructor(initial: SimSettings = {}) {
    this.behaviour = parseSettings(initial);
  }

  set(settings: SimSettings): SimBehaviour {
    return this.apply(parseSettings(settings));
  }

  patch(settings: SimSettings): SimBehaviour {
    return this.apply(parseSettings(settings, this.behaviour));
  }

  clear(): SimBehaviour {
    return this.set({});
  }

  get(): SimBehaviour {
    return { ...this.behaviour };
  }

  hanging(): number {
    return this.gate.size;
  }

  /** Resolves true once `hang` is off, false when `signal` aborts first. */
  waitWhileHanging(signal: AbortSignal): Promise<boolean> {
    return this.gate.wait(() => this.behaviour.hang, signal);
  }

  private apply(next: SimBehaviour): SimBehaviour {
    this.behaviour = next;
    if (!next.hang) this.gate.releaseAll();
    return this.get();
  }
}

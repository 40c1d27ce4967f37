/**
 * The fault × tool matrix of GiftGenius (docs/giftgenius.md#every-fault--tool-what-the-model-is-told): for
 * every fault set through the example services' switches and every tool a model calls, what the model must be
 * told. `truth-matrix.test.ts` drives the real gateway through every cell and asserts it;
 * docs/giftgenius.md's table is generated from it (`docs.ts`), and a test keeps the two equal.
 *
 * The rules: the category, the dependency code and the sentence never disagree; a
 * sentence says "in time" only when something did not answer in time (LATE), "busy"/"overloaded" only when
 * a dependency or our bulkhead is busy (BUSY), "repeated failures" only for an open breaker (OPEN);
 * `retry_after_ms` is present exactly when a wait is known (an open breaker's remaining time, a
 * `Retry-After`), and the sentence then says "try again in about N seconds"; outcome `unknown` only for a
 * write that may have happened (LOST), with an operation id and a lookup.
 */

/** What a GiftGenius deployment uses (examples/giftgenius/upstreams.ts, tools.ts): the docs' times. */
export const PRODUCTION = {
  giftTimeoutMs: 4_000,
  commerceTimeoutMs: 3_000,
  toolDeadlineMs: 10_000,
  giftOpenMs: 30_000,
  commerceOpenMs: 20_000,
} as const;

/**
 * What the matrix runs with: the same breakers and waits (time jumps over them), shorter timeouts and
 * deadline so a hang costs a fraction of a second. The ratios keep production's arithmetic: two gift
 * attempts plus the retry's backoff (up to 200 ms) fit the deadline, and so do a commerce attempt and a
 * lookup of two attempts.
 */
export const MATRIX_SETTINGS = {
  giftTimeoutMs: 300,
  commerceTimeoutMs: 200,
  analyticsTimeoutMs: 200,
  toolDeadlineMs: 1_000,
  giftOpenMs: PRODUCTION.giftOpenMs,
  commerceOpenMs: PRODUCTION.commerceOpenMs,
  stepMs: 10,
  llmPort: 0,
} as const;

/**
 * `Retry-After` of the 503 and 429 faults, in seconds. Longer than the upstream retry's longest wait (30 s),
 * so a call gives up at once and says when to come back instead of waiting inside the deadline.
 */
export const RETRY_AFTER_S = { 503: 40, 429: 50 } as const;

export type ToolName = 'suggest_gifts' | 'checkout' | 'suggest_and_checkout' | 'start_deep_analysis';
export const TOOLS: readonly ToolName[] = [
  'suggest_gifts',
  'checkout',
  'suggest_and_checkout',
  'start_deep_analysis',
];

/** The tools that write (an order at commerce): the only ones that may answer `unknown`. */
export const WRITE_TOOLS: ReadonlySet<ToolName> = new Set(['checkout', 'suggest_and_checkout']);

export type Service = 'gift' | 'commerce' | 'analytics';

export type FaultId =
  | 'none'
  | `gift.${'hang' | 'slow' | '500' | '503' | '429' | 'open' | 'full'}`
  | `commerce.${'hang' | 'slow' | '500' | '503' | '429' | 'open' | 'full' | '400' | 'lost' | 'lost_lookup'}`
  | `analytics.${'hang' | '400'}`;

/** A fault: which service has it and how it reads in the docs. */
export interface Fault {
  id: FaultId;
  service: Service | null;
  label: string;
}

export const FAULTS: readonly Fault[] = [
  { id: 'none', service: null, label: 'none' },
  { id: 'gift.hang', service: 'gift', label: 'gift hangs' },
  { id: 'gift.slow', service: 'gift', label: 'gift slow (5 s an answer)' },
  { id: 'gift.500', service: 'gift', label: 'gift HTTP 500' },
  { id: 'gift.503', service: 'gift', label: `gift 503, Retry-After ${RETRY_AFTER_S[503]}` },
  { id: 'gift.429', service: 'gift', label: `gift 429, Retry-After ${RETRY_AFTER_S[429]}` },
  { id: 'gift.open', service: 'gift', label: 'gift breaker open' },
  { id: 'gift.full', service: 'gift', label: 'gift bulkhead full' },
  { id: 'commerce.hang', service: 'commerce', label: 'commerce hangs' },
  { id: 'commerce.slow', service: 'commerce', label: 'commerce slow (3.75 s an answer)' },
  { id: 'commerce.500', service: 'commerce', label: 'commerce HTTP 500' },
  { id: 'commerce.503', service: 'commerce', label: `commerce 503, Retry-After ${RETRY_AFTER_S[503]}` },
  { id: 'commerce.429', service: 'commerce', label: `commerce 429, Retry-After ${RETRY_AFTER_S[429]}` },
  { id: 'commerce.open', service: 'commerce', label: 'commerce breaker open' },
  { id: 'commerce.full', service: 'commerce', label: 'commerce bulkhead full' },
  { id: 'commerce.400', service: 'commerce', label: 'commerce refuses (HTTP 400)' },
  { id: 'commerce.lost', service: 'commerce', label: 'order placed, answer lost' },
  { id: 'commerce.lost_lookup', service: 'commerce', label: 'answer lost, lookup failing' },
  { id: 'analytics.hang', service: 'analytics', label: 'analytics hangs' },
  { id: 'analytics.400', service: 'analytics', label: 'analytics refuses (HTTP 400)' },
];

/** The kinds of sentence (the contract's table); `check.ts` has what each must and must not say. */
export type SentenceKind = 'LATE' | 'OPEN' | 'BUSY' | 'FAILING' | 'REFUSED' | 'LOST';

/** The dependency codes GiftGenius gives its two visible dependencies (examples/giftgenius/upstreams.ts). */
export const CODES = {
  gift: {
    timeout: 'gift_service_timeout',
    open: 'gift_service_unavailable',
    busy: 'gift_service_busy',
    failing: 'gift_service_failing',
  },
  commerce: {
    open: 'payment_service_unavailable',
    busy: 'payment_service_busy',
    refused: 'checkout_rejected',
    unknown: 'checkout_outcome_unknown',
  },
} as const;

/** A failure as the model reads it: `structuredContent.error` of a tool result or of `get_job_status`. */
export interface Failure {
  ok: false;
  code: string;
  category: string;
  kind: SentenceKind;
  outcome: 'failed' | 'unknown';
  retryable: boolean;
  /** The wait the answer carries as `retry_after_ms` (ms, at the moment the failure happened), or null. */
  waitMs: number | null;
}

/** A success (for a job: it completed); `reconciled`: the order was found by its lookup, not confirmed. */
export interface Success {
  ok: true;
  reconciled?: boolean;
}

export interface Cell {
  fault: FaultId;
  tool: ToolName;
  told: Success | Failure;
  /** Requests the faulted service receives for the call (for a job: all its runs); undefined: not counted. */
  requests?: number;
  /** `start_deep_analysis` only: the runs the job made. */
  jobAttempts?: number;
  /** How fast the answer comes at production settings (the docs' column). */
  howFast: string;
}

const ok: Success = { ok: true };

function failure(
  code: string,
  category: string,
  kind: SentenceKind,
  waitMs: number | null = null,
  outcome: 'failed' | 'unknown' = 'failed',
): Failure {
  const retryable = outcome === 'failed' && kind !== 'REFUSED';
  return { ok: false, code, category, kind, outcome, retryable, waitMs };
}

const s = (ms: number): string => `${ms / 1_000} s`;
const AT_ONCE = 'at once';
const GIFT_LATE = `≤ ${s(2 * PRODUCTION.giftTimeoutMs + 200)}: two ${s(PRODUCTION.giftTimeoutMs)} attempts`;
const ORDER_LOST = `≤ ${s(3 * PRODUCTION.commerceTimeoutMs + 200)}: the ${s(PRODUCTION.commerceTimeoutMs)} order, then a lookup of two attempts`;
const jobFast = (final: string): string => `job_id at once; ${final}`;

/** The cells of one fault that only one dependency's tools feel: the others answer as without a fault. */
function cells(fault: FaultId, felt: Partial<Record<ToolName, Omit<Cell, 'fault' | 'tool'>>>): Cell[] {
  return TOOLS.map((tool) => {
    const cell = felt[tool];
    if (cell !== undefined) return { fault, tool, ...cell };
    const isolated: Omit<Cell, 'fault' | 'tool'> =
      tool === 'start_deep_analysis'
        ? { told: ok, jobAttempts: 1, howFast: jobFast('completed') }
        : { told: ok, howFast: AT_ONCE };
    return { fault, tool, ...isolated };
  });
}

/** A gift fault: suggest_gifts and suggest_and_checkout say the same (no order is placed). */
function giftFault(
  fault: FaultId,
  sync: Omit<Cell, 'fault' | 'tool'>,
  job: Omit<Cell, 'fault' | 'tool'>,
): Cell[] {
  return cells(fault, { suggest_gifts: sync, suggest_and_checkout: sync, start_deep_analysis: job });
}

/** A commerce fault: checkout and suggest_and_checkout say the same. */
function commerceFault(fault: FaultId, cell: Omit<Cell, 'fault' | 'tool'>): Cell[] {
  return cells(fault, { checkout: cell, suggest_and_checkout: cell });
}

const G = CODES.gift;
const C = CODES.commerce;
/** A job failing under a gift fault: two runs of two failed attempts, then the fifth failure opens the breaker. */
const giftJobOpened: Omit<Cell, 'fault' | 'tool'> = {
  told: failure(G.open, 'circuit_open', 'OPEN', PRODUCTION.giftOpenMs),
  requests: 5,
  jobAttempts: 3,
  howFast: jobFast('failed after 3 runs, the last refused by the breaker the first two opened'),
};
const giftRefusal = (status: 503 | 429): Cell[] => {
  const waitMs = RETRY_AFTER_S[status] * 1_000;
  return giftFault(
    `gift.${status}`,
    { told: failure(G.busy, 'upstream_unavailable', 'BUSY', waitMs), requests: 1, howFast: AT_ONCE },
    {
      told: failure(G.busy, 'upstream_unavailable', 'BUSY', waitMs),
      requests: 3,
      jobAttempts: 3,
      howFast: jobFast(`failed after 3 runs, ${s(waitMs)} apart (the Retry-After)`),
    },
  );
};
const commerceRefusal = (status: 503 | 429): Cell[] =>
  commerceFault(`commerce.${status}`, {
    told: failure(C.busy, 'upstream_unavailable', 'BUSY', RETRY_AFTER_S[status] * 1_000),
    requests: 1,
    howFast: AT_ONCE,
  });
const lost = (howFast: string, requests?: number): Omit<Cell, 'fault' | 'tool'> => ({
  told: failure(C.unknown, 'outcome_unknown', 'LOST', null, 'unknown'),
  requests,
  howFast,
});

export const CELLS: readonly Cell[] = [
  ...cells('none', {}),
  ...giftFault(
    'gift.hang',
    { told: failure(G.timeout, 'timeout', 'LATE'), requests: 2, howFast: GIFT_LATE },
    giftJobOpened,
  ),
  ...giftFault(
    'gift.slow',
    { told: failure(G.timeout, 'timeout', 'LATE'), requests: 2, howFast: GIFT_LATE },
    giftJobOpened,
  ),
  ...giftFault(
    'gift.500',
    { told: failure(G.failing, 'upstream_unavailable', 'FAILING'), requests: 2, howFast: AT_ONCE },
    giftJobOpened,
  ),
  ...giftRefusal(503),
  ...giftRefusal(429),
  ...giftFault(
    'gift.open',
    {
      told: failure(G.open, 'circuit_open', 'OPEN', PRODUCTION.giftOpenMs),
      requests: 0,
      howFast: AT_ONCE,
    },
    {
      told: ok,
      requests: 1,
      jobAttempts: 2,
      howFast: jobFast('completed on its 2nd run, once the breaker let a trial through'),
    },
  ),
  ...giftFault(
    'gift.full',
    { told: failure(G.busy, 'bulkhead_full', 'BUSY'), howFast: AT_ONCE },
    { told: ok, jobAttempts: 2, howFast: jobFast('completed on its 2nd run') },
  ),
  ...commerceFault('commerce.hang', lost(ORDER_LOST, 3)),
  ...commerceFault('commerce.slow', lost(ORDER_LOST, 3)),
  ...commerceFault('commerce.500', lost(AT_ONCE, 3)),
  ...commerceRefusal(503),
  ...commerceRefusal(429),
  ...commerceFault('commerce.open', {
    told: failure(C.open, 'circuit_open', 'OPEN', PRODUCTION.commerceOpenMs),
    requests: 0,
    howFast: AT_ONCE,
  }),
  ...commerceFault('commerce.full', { told: failure(C.busy, 'bulkhead_full', 'BUSY'), howFast: AT_ONCE }),
  ...commerceFault('commerce.400', {
    told: failure(C.refused, 'upstream_error', 'REFUSED'),
    requests: 1,
    howFast: AT_ONCE,
  }),
  ...commerceFault('commerce.lost', { told: { ok: true, reconciled: true }, requests: 2, howFast: AT_ONCE }),
  ...commerceFault('commerce.lost_lookup', lost(AT_ONCE, 3)),
  ...cells('analytics.hang', {}),
  ...cells('analytics.400', {}),
];

/** The fault of `id`. @throws Error for an id not in {@link FAULTS}. */
export function faultOf(id: FaultId): Fault {
  const fault = FAULTS.find((f) => f.id === id);
  if (fault === undefined) throw new Error(`no fault ${id}`);
  return fault;
}

/**
 * What a sentence of each kind must say (every pattern), for the docs and the checks. Besides these, the
 * exclusive words of {@link EXCLUSIVE_WORDS} appear only in their own kind.
 */
export const SENTENCE_RULES: Readonly<Record<SentenceKind, { must: readonly RegExp[]; says: string }>> = {
  LATE: { must: [/did not answer in time/], says: 'did not answer in time' },
  OPEN: {
    must: [/temporarily unavailable after repeated failures/],
    says: 'temporarily unavailable after repeated failures',
  },
  BUSY: { must: [/busy|overloaded/], says: 'busy right now' },
  FAILING: { must: [/failing|not working/], says: 'not working right now' },
  REFUSED: { must: [/: The service answered 400 instead of handling the request/], says: 'rejected: <why>' },
  LOST: {
    must: [/may or may not/, /check its status/],
    says: 'may or may not have happened; check its status first',
  },
};

/** Words only one kind of sentence may use. */
export const EXCLUSIVE_WORDS: ReadonlyArray<readonly [RegExp, SentenceKind]> = [
  [/in time/i, 'LATE'],
  [/overloaded|busy/i, 'BUSY'],
  [/repeated failures/i, 'OPEN'],
];

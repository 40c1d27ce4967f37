import { errorFields, toBreakwaterError, type Clock, type EventSource, type Log } from '../../core/index.js';
import type { OperationPatch, OperationRecord, OperationStore } from '../../store/index.js';
import { decideFailure, decideLookup, observationOf, waitPatch } from './decide.js';
import { LEDGER_DEFAULTS } from './defaults.js';
import { evidenceOf, toResult, type Evidence } from './result.js';
import type {
  AnyOperationAction,
  OperationAuditSink,
  OperationCallContext,
  OperationOutcomeEvent,
  OperationResult,
} from './types.js';

/** What the steps share with their ledger. */
export interface StepDeps {
  store: OperationStore;
  audit: OperationAuditSink | undefined;
  log: Log;
  clock: Clock;
  checkEveryMs: number;
  /** Hears each transition to an outcome this process wins (`OperationLedger.onOutcome`). */
  outcomes: EventSource<OperationOutcomeEvent>;
}

/**
 * The steps of an operation (docs/operations.md#what-execute-does): an attempt, a lookup, and the loop that
 * runs them until the operation settles or must wait. Each writes with a compare-and-set on the stored
 * version (a lost race re-reads), logs the transitions it wins and records them in the audit log.
 * `OperationLedger` decides when to run them (a caller's `execute`, a recovery pass, `reconcile`).
 */
export class OperationSteps {
  private readonly store: OperationStore;
  private readonly audit: OperationAuditSink | undefined;
  private readonly log: Log;
  private readonly clock: Clock;
  private readonly checkEveryMs: number;
  private readonly outcomes: EventSource<OperationOutcomeEvent>;
  /** Drives and lookups this process is running, by operation id: a second one joins instead of racing. */
  private readonly driving = new Map<string, Promise<unknown>>();
  private readonly lookups = new Map<string, Promise<unknown>>();

  constructor(deps: StepDeps) {
    this.store = deps.store;
    this.audit = deps.audit;
    this.log = deps.log;
    this.clock = deps.clock;
    this.checkEveryMs = deps.checkEveryMs;
    this.outcomes = deps.outcomes;
  }

  /**
   * Moves an operation until it settles or must wait: sends a `pending` one, looks up an `unknown` one (or an
   * `in_flight` one whose attempt went silent). Each step is a compare-and-set; a lost race re-reads.
   *
   * One drive per operation at a time in this process: a second one (a caller resuming while the recovery
   * loop drives) waits for the running one and goes on from what it left. Racing it would only lose: its
   * lookup is refused by a half-open breaker whose one trial call the first drive holds, or its resend loses
   * the compare-and-set to the first drive's and reads a silent `in_flight`; either way the caller would hear
   * `unknown` again while the answer is on its way. The wait ends with the caller's `signal`: it then gets
   * the operation as it stands. Across processes the compare-and-set decides.
   */
  async drive(
    action: AnyOperationAction,
    start: OperationRecord,
    signal: AbortSignal,
    actor: string,
    caller: boolean,
  ): Promise<OperationResult> {
    let record = start;
    for (let running = this.driving.get(record.id); running !== undefined;) {
      const ended = await endedOrAborted(running, signal);
      record = await this.reread(record);
      // Cut off while waiting: answer with the operation as it stands (`unknown` while an attempt flies).
      if (!ended) return toResult(record, action, this.clock.now());
      running = this.driving.get(record.id);
    }
    return held(this.driving, record.id, this.driveAlone(action, record, signal, actor, caller));
  }

  private async driveAlone(
    action: AnyOperationAction,
    start: OperationRecord,
    signal: AbortSignal,
    actor: string,
    caller: boolean,
  ): Promise<OperationResult> {
    let record = start;
    const maxAttempts = action.maxAttempts ?? LEDGER_DEFAULTS.maxAttempts;
    // Each pass sends at most once, and sends only while attempts < maxAttempts: the loop ends.
    for (let pass = 0; pass <= maxAttempts + 1; pass++) {
      const now = this.clock.now();
      if (record.state === 'succeeded' || record.state === 'failed' || record.state === 'needs_attention')
        break;
      if (record.state === 'in_flight' && record.nextCheckAt !== null && now < record.nextCheckAt) break;
      if (signal.aborted) break;
      if (record.state === 'pending') {
        if (record.attempts >= maxAttempts || (!caller && record.error !== null)) break;
        const next = await this.attemptStep(action, record, signal, actor);
        if (next.reread) {
          record = next.record;
          continue;
        }
        record = next.record;
        // Only an unknown attempt goes on (to a lookup); pending/settled results go back to the caller.
        if (record.state !== 'unknown') break;
        continue;
      }
      // unknown, or in_flight gone silent; not while the wait a failed lookup carried lasts
      const lookupRetryAt = evidenceOf(record).lookup_retry_at;
      if (lookupRetryAt !== undefined && now < lookupRetryAt) break;
      const looked = await this.lookupStep(action, record, signal, actor, false);
      record = looked.record;
      if (!looked.again) break;
    }
    return toResult(record, action, this.clock.now());
  }

  /** Sends one attempt: CAS to `in_flight`, audit, send, CAS to the outcome. */
  private async attemptStep(
    action: AnyOperationAction,
    record: OperationRecord,
    signal: AbortSignal,
    actor: string,
  ): Promise<{ record: OperationRecord; reread: boolean }> {
    const now = this.clock.now();
    const attempt = record.attempts + 1;
    const flying = await this.store.update(record.id, record.version, {
      state: 'in_flight',
      attempts: attempt,
      nextCheckAt: now + (action.attemptTimeoutMs ?? LEDGER_DEFAULTS.attemptTimeoutMs),
      evidence: { ...evidenceOf(record), last_attempt_at: now } satisfies Evidence,
    });
    if (flying === undefined) return { record: await this.reread(record), reread: true };
    await this.auditStep(actor, 'operation.attempt', flying, { attempt });
    let patch: OperationPatch;
    let step: string;
    try {
      const result: unknown = await action.send(this.context(flying, signal));
      patch = {
        state: 'succeeded',
        result: result ?? null,
        observation: 'response_received',
        nextCheckAt: null,
      };
      step = 'operation.succeeded';
    } catch (error) {
      ({ patch, step } = decideFailure(error, flying, this.clock.now()));
    }
    const settled = await this.transition(flying, actor, step, patch);
    return settled === undefined
      ? { record: await this.reread(flying), reread: true }
      : { record: settled, reread: false };
  }

  /**
   * Looks the operation up and settles it on a confirmed result. `again: true` when the caller should go on
   * with the returned record: it went back to `pending` for a resend (allowed and nothing accepted), or
   * another writer moved it first (re-read). `manual`: never resend, and a `not_found` settles
   * it `failed` (it is past its deadline: no request is still in transit).
   */
  async lookupStep(
    action: AnyOperationAction,
    record: OperationRecord,
    signal: AbortSignal,
    actor: string,
    manual: boolean,
  ): Promise<{ record: OperationRecord; again: boolean }> {
    // One lookup per operation at a time in this process. A second one (a caller resuming while the recovery
    // loop looks) would only race the first: through a half-open breaker it is refused while the first one
    // is the trial call, and it would answer `unknown` again although an answer is on its way. It waits for
    // the running lookup and reads what it found instead. Across processes the compare-and-set decides.
    const running = this.lookups.get(record.id);
    if (running !== undefined) {
      await running.catch(() => undefined);
      const after = await this.reread(record);
      return { record: after, again: after.state === 'pending' };
    }
    return held(this.lookups, record.id, this.lookupOnce(action, record, signal, actor, manual));
  }

  private async lookupOnce(
    action: AnyOperationAction,
    record: OperationRecord,
    signal: AbortSignal,
    actor: string,
    manual: boolean,
  ): Promise<{ record: OperationRecord; again: boolean }> {
    const now = this.clock.now();
    let patch: OperationPatch;
    let step: string;
    let resend = false;
    let data: Record<string, unknown> | undefined;
    if (action.lookup === undefined) {
      ({ patch, step } = { patch: waitPatch(record, now, this.checkEveryMs), step: 'operation.unknown' });
    } else {
      try {
        const found = await action.lookup(this.context(record, signal));
        ({ patch, step, resend } = decideLookup(action, record, found, now, manual, this.checkEveryMs));
        data = { found: found.state };
      } catch (error) {
        const last_lookup = `lookup failed: ${observationOf(error)}`;
        // The wait the failure carried (an open breaker's remaining time, the service's Retry-After): the
        // next lookup is not due before it, and the `unknown` result tells it (`retry_after_ms`).
        const waitMs = toBreakwaterError(error).retryAfterMs;
        const lookupRetryAt = waitMs !== undefined && waitMs > 0 ? now + waitMs : undefined;
        const { lookup_retry_at: _previous, ...kept } = evidenceOf(record);
        const evidence: Evidence = { ...kept, last_lookup_at: now, last_lookup };
        if (lookupRetryAt !== undefined) evidence.lookup_retry_at = lookupRetryAt;
        const wait = waitPatch(record, now, this.checkEveryMs);
        if (lookupRetryAt !== undefined && wait.nextCheckAt != null) {
          wait.nextCheckAt = Math.max(wait.nextCheckAt, lookupRetryAt);
        }
        patch = { ...wait, evidence };
        step = 'operation.lookup_failed';
      }
    }
    const updated = await this.transition(record, actor, step, patch, data);
    if (updated === undefined) return { record: await this.reread(record), again: true };
    return { record: updated, again: resend };
  }

  private context(record: OperationRecord, signal: AbortSignal): OperationCallContext<unknown> {
    return {
      operationId: record.id,
      correlationId: record.correlationId,
      request: record.request,
      attempt: record.attempts,
      signal,
    };
  }

  /** CAS update plus its audit record; undefined when another writer moved the operation first. */
  async transition(
    record: OperationRecord,
    actor: string,
    step: string,
    patch: OperationPatch,
    data?: Record<string, unknown>,
  ): Promise<OperationRecord | undefined> {
    const updated = await this.store.update(record.id, record.version, patch);
    if (updated !== undefined) {
      this.logTransition(record, updated, step);
      await this.auditStep(actor, step, updated, {
        ...data,
        state: updated.state,
        observation: updated.observation,
      });
      if (this.outcomes.hasListeners && updated.state !== record.state && OUTCOMES.has(updated.state)) {
        this.outcomes.emit({ record: updated, previous: record.state });
      }
    }
    return updated;
  }

  private async reread(record: OperationRecord): Promise<OperationRecord> {
    const again = await this.store.get(record.id);
    if (again === undefined) throw new Error(`operation ${record.id} vanished from the ledger`);
    return again;
  }

  private logTransition(before: OperationRecord, after: OperationRecord, step: string): void {
    // `info` even for `unknown`: the warning is the escalation, once the recovery deadline has passed.
    if (!this.log.enabled('info')) return;
    const fields: Record<string, unknown> = {
      operation_id: after.id,
      action: after.action,
      step,
      from: before.state,
      to: after.state,
      attempts: after.attempts,
    };
    if (after.observation !== null) fields['observation'] = after.observation;
    const error = after.error as { code?: unknown } | null;
    if (typeof error?.code === 'string') fields['code'] = error.code;
    this.log.info(fields, 'operation transition');
  }

  /**
   * Appends the step to the audit log. The log is evidence, not a gate: a failed append is a warning, and
   * the operation goes on (stopping between a persisted attempt and its send would strand it `in_flight`).
   */
  async auditStep(actor: string, step: string, record: OperationRecord, data: unknown): Promise<void> {
    if (this.audit === undefined) return;
    try {
      await this.audit.record({
        actor,
        action: step,
        target: record.target,
        operationId: record.id,
        correlationId: record.correlationId,
        data,
      });
    } catch (error) {
      this.log.warn(
        { err: errorFields(error), operation_id: record.id, step },
        'audit record of an operation step failed',
      );
    }
  }
}

/** The states {@link OperationLedger.onOutcome} reports: the outcomes of the result contract. */
const OUTCOMES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'unknown']);

/** `step`, listed under `id` in `running` until it ends, so that others join it instead of racing it. */
async function held<T>(running: Map<string, Promise<unknown>>, id: string, step: Promise<T>): Promise<T> {
  running.set(id, step);
  try {
    return await step;
  } finally {
    if (running.get(id) === step) running.delete(id);
  }
}

/** True once `running` has ended (either way), false if `signal` aborts first. Never rejects. */
function endedOrAborted(running: Promise<unknown>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const onAbort = (): void => resolve(false);
    signal.addEventListener('abort', onAbort, { once: true });
    void running
      .then(
        () => resolve(true),
        () => resolve(true),
      )
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}

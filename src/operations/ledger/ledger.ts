import {
  BreakwaterError,
  EventSource,
  canAccess,
  defineOptions,
  errorFields,
  fingerprint,
  Log,
  LogContext,
  neverAbortedSignal,
  newId,
  o,
  PrincipalContext,
  toBreakwaterError,
  type Clock,
  type Disposable,
  type Listener,
} from '../../core/index.js';
import type { OperationRecord, OperationStore } from '../../store/index.js';
import { LEDGER_DEFAULTS } from './defaults.js';
import { OperationSteps } from './steps.js';
import { evidenceOf, operationError, toResult } from './result.js';
import type {
  AnyOperationAction,
  ExecuteOptions,
  NeedsAttentionEvent,
  OperationAction,
  LedgerLog,
  OperationAuditSink,
  OperationLedgerOptions,
  OperationOutcomeEvent,
  OperationResult,
} from './types.js';

const LOG_METHODS = ['info', 'warn', 'error'] as const;

/** Checks {@link OperationLedgerOptions} and applies {@link LEDGER_DEFAULTS}. */
const parseOptions = defineOptions<OperationLedgerOptions>()('OperationLedger', {
  store: o.methods<OperationStore>('an OperationStore', 'begin', 'get', 'update', 'list'),
  actions: o.custom<readonly AnyOperationAction[]>(Array.isArray, 'an array of actions').default([]),
  audit: o.methods<OperationAuditSink>('an audit log with record()', 'record').optional(),
  log: o
    .custom<LedgerLog>(
      (v) =>
        typeof v === 'object' &&
        v !== null &&
        LOG_METHODS.some((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
      'a pino-compatible logger (info, warn or error methods)',
    )
    .optional(),
  clock: o.clock(),
  checkEveryMs: o.number().positive().default(LEDGER_DEFAULTS.checkEveryMs),
});

/**
 * The outbound operation ledger (docs/operations.md#the-operation-ledger). `execute` persists the intent and
 * an operation id before any network call, then sends with that id as idempotency key and correlation id
 * (on every attempt, also after a restart), and tells the histories apart (`decideFailure`):
 * - the request never reached the service (a transient failure before it was written), or the service
 *   answered that it did not process it (408, 425, 429, 503) and the action allows resending: the operation
 *   stays `pending`; the result is `failed` with `retry_allowed: true` and the wait the failure carried
 *   (`retry_after_ms`);
 * - the service refused it (a permanent error), answered "not processed" to an action that does not allow
 *   resending, or did it: settled `failed` / `succeeded`;
 * - it went silent after it may have been written: `unknown`. The ledger then looks it up (the action's
 *   `lookup`, same id) and continues only on a confirmed result; it resends only when the action allows it and
 *   the lookup found nothing; past the recovery deadline a recovery pass (`recover`, or the loop of
 *   `startRecovery`) marks it `needs_attention` with the evidence, logs a warning and emits an event.
 *
 * Every transition is a compare-and-set on the stored version, so several processes may execute, resume and
 * recover the same operations: one wins each step, the others re-read.
 *
 * Ownership (docs/architecture.md#identity-and-ownership): a new operation belongs to the current principal
 * (`PrincipalContext`, e.g. the MCP client whose tool call runs it) unless `owner` says otherwise. Under a
 * principal, `execute` with an `operationId` and `reconcile` answer `not_found` for an operation it may not
 * see (another's, without the `admin` scope), exactly as for an id that does not exist. Outside any principal
 * (the application's own code, recovery loops, the CLI) nothing is checked.
 *
 * Logged through `log` (else the process logger): each transition this process wins (`operation
 * transition`, `info`: `action`, `step`, `from`, `to`, `attempts`, `observation`, `code`), escalations
 * and failures of its own steps (`warn`). Everything an operation's steps do (its `send` and
 * `lookup`, an upstream's failure inside them) runs in a `LogContext` with its `operation_id`.
 */
export class OperationLedger {
  private readonly store: OperationStore;
  private readonly actions = new Map<string, AnyOperationAction>();
  private readonly audit: OperationAuditSink | undefined;
  private readonly log: Log;
  private readonly clock: Clock;
  private readonly checkEveryMs: number;
  private readonly attention = new EventSource<NeedsAttentionEvent>();
  private readonly outcomes = new EventSource<OperationOutcomeEvent>();
  private readonly steps: OperationSteps;
  /** Operations marked `needs_attention` by this process (a counter for metrics). */
  escalated = 0;

  /**
   * @throws OptionsError (`RangeError`, `invalid_options`, owner `OperationLedger`) naming every bad option;
   *   TypeError for two different actions of one name.
   */
  constructor(options: OperationLedgerOptions) {
    const parsed = parseOptions(options);
    this.store = parsed.store;
    this.audit = parsed.audit;
    this.log = new Log(parsed.log);
    this.clock = parsed.clock;
    this.checkEveryMs = parsed.checkEveryMs;
    this.steps = new OperationSteps({
      store: this.store,
      audit: this.audit,
      log: this.log,
      clock: this.clock,
      checkEveryMs: this.checkEveryMs,
      outcomes: this.outcomes,
    });
    for (const action of parsed.actions) this.define(action);
  }

  /** Subscribes to operations escalated to `needs_attention` by this process. */
  onNeedsAttention(listener: Listener<NeedsAttentionEvent>): Disposable {
    return this.attention.on(listener);
  }

  /**
   * Subscribes to operations this process moves to an outcome: `succeeded`, `failed` or `unknown` (see
   * {@link OperationOutcomeEvent}), once per transition (each is a compare-and-set: one process wins it). For
   * metrics; a listener that throws breaks nothing.
   */
  onOutcome(listener: Listener<OperationOutcomeEvent>): Disposable {
    return this.outcomes.on(listener);
  }

  /**
   * Runs `action` with `request`, or resumes the operation `options.operationId` / `options.key`.
   * @returns the result contract; a failure of the call is a result (`failed` or `unknown`), not a rejection.
   * @throws BreakwaterError `not_found` (404) for an `operationId` the ledger does not hold for this action
   *   or the current principal may not see; `idempotency_key_mismatch` (422) when a resumed operation was
   *   begun with another request, or `key` is held by another principal's operation;
   *   `invalid_payload` for a request with no JSON form; the store's error when the operation cannot be
   *   begun (then nothing was sent). A failure after that (the ledger's store failing mid-way) rejects with
   *   the operation's id: `outcome_unknown` when an attempt may have gone out, else the error itself.
   */
  async execute<Req, Res>(
    action: OperationAction<Req, Res>,
    request: Req,
    options: ExecuteOptions = {},
  ): Promise<OperationResult<Res>> {
    this.define(action);
    const stored = action.redact === undefined ? request : action.redact(request);
    const actor = options.actor ?? 'breakwater';
    let record: OperationRecord;
    if (options.operationId !== undefined) {
      const found = await this.store.get(options.operationId);
      if (found === undefined || found.action !== action.name || !visible(found)) {
        throw new BreakwaterError('not_found', {
          message: `No ${action.name} operation has the id ${options.operationId}; start a new one without an operation id.`,
          operationId: options.operationId,
        });
      }
      record = found;
    } else {
      const id = newId('op');
      const begun = await this.store.begin({
        id,
        action: action.name,
        target: action.target,
        request: stored,
        retryAllowed: action.retryAllowed,
        reconcile: action.reconcile?.(id) ?? null,
        recoveryDeadlineAt: this.clock.now() + (action.recoveryMs ?? LEDGER_DEFAULTS.recoveryMs),
        key: options.key,
        owner: options.owner === undefined ? (PrincipalContext.get()?.id ?? null) : options.owner,
      });
      if (!begun.created && !visible(begun.record)) {
        // Another principal's key: its operation (id, request, result) stays theirs.
        throw new BreakwaterError('idempotency_key_mismatch', {
          message: `The key ${JSON.stringify(options.key)} belongs to another operation; start this one with a key of its own.`,
        });
      }
      record = begun.record;
      if (begun.created) await this.steps.auditStep(actor, 'operation.begin', record, { request: stored });
    }
    if (fingerprint(record.request) !== fingerprint(stored)) {
      throw new BreakwaterError('idempotency_key_mismatch', {
        message: `Operation ${record.id} was started with a different request; resume it with the same one, or start a new operation.`,
        operationId: record.id,
      });
    }
    options.onOperation?.(record.id, action.reconcile?.(record.id) ?? record.reconcile);
    const begun = record;
    try {
      const result = await LogContext.run({ operation_id: begun.id }, () =>
        this.steps.drive(action, begun, options.signal ?? neverAbortedSignal, actor, true),
      );
      return result as OperationResult<Res>;
    } catch (error) {
      throw await this.failedMidway(action, record.id, error);
    }
  }

  /**
   * The error for a caller whose operation exists but whose `execute` failed on the way (the ledger's own
   * store, a bug): it names the operation, and says `unknown` when an attempt may have gone out, so the
   * caller resumes the operation instead of starting a second one.
   */
  private async failedMidway(
    action: AnyOperationAction,
    id: string,
    error: unknown,
  ): Promise<BreakwaterError> {
    const record = await this.store.get(id).catch(() => undefined);
    if (record === undefined)
      return new BreakwaterError('outcome_unknown', { operationId: id, cause: error });
    if (record.state === 'failed') return operationError(toResult(record, action, this.clock.now()));
    if (record.state === 'pending') {
      const base = toBreakwaterError(error);
      return new BreakwaterError(base.code, {
        message: base.message,
        kind: base.kind,
        status: base.status,
        retryAfterMs: base.retryAfterMs,
        outcome: 'failed',
        operationId: id,
        source: base.source,
        details: base.details,
        cause: error,
      });
    }
    if (record.state === 'in_flight') {
      // This process's attempt is over, whatever it did: due for a lookup now, not after its expiry.
      const patch = {
        state: 'unknown' as const,
        observation: 'ledger_write_failed',
        nextCheckAt: this.clock.now(),
      };
      await this.store.update(id, record.version, patch).catch(() => undefined);
    }
    // in_flight, unknown, needs_attention, even succeeded (stored, not answered): the caller resumes it.
    return operationError(toResult({ ...record, state: 'unknown' }, action, this.clock.now()));
  }

  /**
   * Looks an unsettled operation up now (`breakwater ops reconcile`): settles it on a confirmed result, and
   * — past its deadline or in `needs_attention` — never resends: a `not_found` then settles it `failed`.
   * @throws BreakwaterError `not_found` for an unknown id, or one the current principal may not see; Error
   *   when its action is not registered here.
   */
  async reconcile(operationId: string, actor = 'breakwater'): Promise<OperationResult> {
    const record = await this.store.get(operationId);
    if (record === undefined || !visible(record)) {
      throw new BreakwaterError('not_found', {
        message: `No operation has the id ${operationId}.`,
        operationId,
      });
    }
    const action = this.actions.get(record.action);
    if (action === undefined) {
      throw new Error(
        `The action ${record.action} of operation ${operationId} is not registered in this process.`,
      );
    }
    if (record.state === 'succeeded' || record.state === 'failed')
      return toResult(record, action, this.clock.now());
    const manual = record.state === 'needs_attention' || this.clock.now() >= record.recoveryDeadlineAt;
    const after = await LogContext.run(recoveryFields(record), () =>
      this.steps.lookupStep(action, record, neverAbortedSignal, actor, manual),
    );
    return toResult(after.record, action, this.clock.now());
  }

  /**
   * One recovery pass: every operation due for a look (`unknown`, a silent `in_flight`, an abandoned
   * `pending`) is reconciled, resent (when allowed and nothing was accepted) or, past its deadline,
   * escalated to `needs_attention`; a `pending` one past its deadline is settled `failed`. Resolves how many
   * operations it looked at.
   *
   * Operations of actions this process defines are looked at per action. A `pending` one past its deadline
   * needs no action to settle (there is nothing to send or look up), so those of actions defined nowhere
   * here are settled too: an operation whose app no longer runs (a script that exited, an action renamed)
   * does not stay `pending` for ever, and then ages out with retention like any settled one.
   */
  async recover(limit = 100): Promise<number> {
    let looked = 0;
    const step = async (record: OperationRecord, run: () => Promise<void>): Promise<void> => {
      looked++;
      try {
        await LogContext.run(recoveryFields(record), run);
      } catch (error) {
        this.log.warn(
          { err: errorFields(error), operation_id: record.id },
          'operation recovery step failed; retrying later',
        );
      }
    };
    const now = this.clock.now();
    const pending = await this.store.list({ states: ['pending'], dueBy: now, limit });
    for (const record of pending) {
      if (this.actions.has(record.action) || now < record.recoveryDeadlineAt) continue;
      await step(record, () => this.settleUnsent(record));
    }
    // Per action this process defines, so operations of actions defined elsewhere never crowd them out.
    for (const action of this.actions.values()) {
      const due = await this.store.list({
        states: ['unknown', 'in_flight', 'pending', 'needs_attention'],
        action: action.name,
        dueBy: this.clock.now(),
        limit,
      });
      for (const record of due) await step(record, () => this.recoverOne(action, record));
    }
    return looked;
  }

  /**
   * Runs {@link recover} every `everyMs` (default `checkEveryMs`) on the ledger's clock until disposed.
   * A pass that throws is logged; the next one runs anyway.
   */
  startRecovery(everyMs = this.checkEveryMs): Disposable {
    let stopped = false;
    const tick = (): void => {
      void this.recover()
        .catch((error: unknown) =>
          this.log.warn({ err: errorFields(error) }, 'operation recovery pass failed'),
        )
        .finally(() => {
          if (!stopped) timer = this.clock.setTimeout(tick, everyMs);
        });
    };
    let timer = this.clock.setTimeout(tick, everyMs);
    return {
      dispose: () => {
        stopped = true;
        this.clock.clearTimeout(timer);
      },
    };
  }

  /**
   * Registers an action, so operations of it are recovered by this process (`execute` registers its action
   * too). @throws TypeError for another action object under a name already registered.
   */
  define(action: AnyOperationAction): void {
    const known = this.actions.get(action.name);
    if (known === undefined) this.actions.set(action.name, action);
    else if (known !== action) {
      throw new TypeError(`OperationLedger: two different actions are named ${action.name}`);
    }
  }

  private async recoverOne(action: AnyOperationAction, record: OperationRecord): Promise<void> {
    if (record.state === 'needs_attention') {
      // Scheduled by requestReconcile (`breakwater ops reconcile`): look it up, never resend.
      await this.steps.lookupStep(action, record, neverAbortedSignal, 'system', true);
      return;
    }
    const now = this.clock.now();
    if (now >= record.recoveryDeadlineAt) {
      if (record.state === 'pending') {
        await this.settleUnsent(record);
        return;
      }
      await this.escalate(record);
      return;
    }
    if (record.state === 'pending') {
      // Nothing was sent (or nothing went out since a lookup found nothing): there is nothing to look up. It
      // waits for its caller until its deadline (due early only when `ops reconcile` asked).
      await this.store.update(record.id, record.version, { nextCheckAt: record.recoveryDeadlineAt });
      return;
    }
    await this.steps.drive(action, record, neverAbortedSignal, 'system', false);
  }

  /**
   * Settles a `pending` operation past its recovery deadline `failed`: every attempt failed before it was
   * written, or was answered "not processed" (`decideFailure`); nothing happened, and nobody came back for
   * it. A compare-and-set: a caller resuming it at the same moment either sends first or reads it settled.
   */
  private async settleUnsent(record: OperationRecord): Promise<void> {
    const answered = record.observation !== null && /^http_\d{3}$/.test(record.observation);
    await this.steps.transition(record, 'system', 'operation.failed', {
      state: 'failed',
      error: answered
        ? {
            code: 'not_processed',
            message: 'The service did not process any attempt before the recovery deadline.',
          }
        : { code: 'not_sent', message: 'No attempt reached the service before the recovery deadline.' },
      nextCheckAt: null,
    });
  }

  private async escalate(record: OperationRecord): Promise<void> {
    const now = this.clock.now();
    const evidence = {
      ...evidenceOf(record),
      escalated_at: now,
      created_at: record.createdAt,
      deadline_at: record.recoveryDeadlineAt,
      target: record.target,
      attempts: record.attempts,
      last_observation: record.observation,
      lookup: record.reconcile,
    };
    const updated = await this.steps.transition(record, 'system', 'operation.needs_attention', {
      state: 'needs_attention',
      evidence,
      nextCheckAt: null,
    });
    if (updated === undefined) return;
    this.escalated++;
    this.log.warn(
      { operation_id: record.id, action: record.action, target: record.target, evidence },
      'operation outcome still unknown past its recovery deadline: needs attention',
    );
    this.attention.emit({ record: updated });
  }
}

/**
 * True when the current principal may see `record`: always outside any principal (the application's own
 * code), else its owner or `admin` (core's `canAccess`).
 */
function visible(record: OperationRecord): boolean {
  const principal = PrincipalContext.get();
  return principal === undefined || canAccess(principal, record.owner);
}

/** The log scope of a recovery step: no request is behind it, so the operation's own correlation id. */
function recoveryFields(record: OperationRecord): { operation_id: string; correlation_id: string } {
  return { operation_id: record.id, correlation_id: record.correlationId };
}

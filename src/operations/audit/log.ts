/**
 * The audit log writer (docs/operations.md#the-audit-log): append-only, hash-chained records of
 * attempts, outcomes, reconciliations, webhook acceptances, job terminal states and admin actions.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  OptionsError,
  Schema,
  canonicalJson,
  defineOptions,
  invalidOption,
  o,
  type Clock,
} from '../../core/index.js';
import type { AuditRecord, AuditSealer, AuditStore } from '../../store/index.js';
import { redact, redactText } from './redact.js';
import { AUDIT_BODY_VERSION, auditHash, hmacKeyBytes, type AuditBody, type AuditHmacKey } from './seal.js';

/** What happened, as a caller records it. */
export interface AuditEntry {
  /** Who did it: a user, a client scope, `system`, a worker id. Non-empty. */
  actor: string;
  /** What was done, dotted by convention: `operation.attempt`, `webhook.accepted`, `job.failed`. Non-empty. */
  action: string;
  /** What it was done to: an order, a job id, a webhook source. Non-empty. */
  target: string;
  operationId?: string;
  correlationId?: string;
  /** Any JSON value; redacted before it is stored (see `redact`). Default null. */
  data?: unknown;
}

/** Options of {@link createAuditLog}. */
export interface AuditLogOptions {
  store: AuditStore;
  /**
   * Keys the chain (HMAC-SHA-256 instead of SHA-256), so only a holder of the key can forge a consistent
   * chain: at least 16 bytes. Use one key for the whole chain: records written without it (or with another)
   * do not verify with it.
   */
  hmacKey?: AuditHmacKey;
  /** Source of each record's `at` (default the system clock). */
  clock?: Clock;
}

/** The writer. */
export interface AuditLog {
  /**
   * Appends one record: `{ v: 1, seq, at: clock.now(), actor, action, target, operation_id, correlation_id,
   * data }` as canonical JSON, with `data` (and bearer tokens or card numbers in the other strings)
   * redacted. Every call made in the same event-loop turn goes into one `store.append` (one transaction);
   * while an append is in flight, later calls wait for the next. Resolves with the stored record once its
   * append committed.
   * @throws (rejects) RangeError for an empty or non-string actor, action or target or a non-string id;
   *   BreakwaterError `invalid_payload` for data with no JSON form (a cycle, a BigInt, a non-finite number);
   *   the store's error when the append fails (every record of that append rejects with it).
   */
  record(entry: AuditEntry): Promise<AuditRecord>;
  /** Resolves once every record asked for so far has been appended (or failed). */
  flush(): Promise<void>;
}

interface Pending {
  fields: Omit<AuditBody, 'seq'>;
  resolve(record: AuditRecord): void;
  reject(error: unknown): void;
}

/** The `hmacKey` option as bytes; a bad key is reported by its length, never shown. */
const HMAC_KEY = new Schema<Uint8Array | undefined, AuditHmacKey | undefined>((key, option, problems) => {
  try {
    return hmacKeyBytes('createAuditLog', key as AuditHmacKey | undefined);
  } catch (error) {
    if (!(error instanceof OptionsError)) throw error;
    problems.push(...error.problems.map((problem) => ({ ...problem, option })));
    return undefined;
  }
});

/** Checks {@link AuditLogOptions} (no defaults but the system clock). */
const parseOptions = defineOptions<AuditLogOptions>()('createAuditLog', {
  store: o.methods<AuditStore>('an AuditStore', 'append'),
  hmacKey: HMAC_KEY,
  clock: o.clock(),
});

/**
 * A writer of the audit chain held by `store`.
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createAuditLog`) naming every bad option: a
 *   missing store, a bad clock, an HMAC key shorter than 16 bytes.
 */
export function createAuditLog(options: AuditLogOptions): AuditLog {
  const { store, clock, hmacKey: key } = parseOptions(options);
  let pending: Pending[] = [];
  let draining: Promise<void> | undefined;

  const sealer =
    (fields: Omit<AuditBody, 'seq'>): AuditSealer =>
    (seq, prevHash) => {
      const body = canonicalJson({ ...fields, seq });
      return { body, hash: auditHash(prevHash, body, key) };
    };

  const drain = async (): Promise<void> => {
    // Wait for the turn that asked to end, so every record it makes joins this append.
    await nextTurn();
    while (pending.length > 0) {
      const batch = pending;
      pending = [];
      try {
        const records = await store.append(batch.map((item) => sealer(item.fields)));
        batch.forEach((item, i) => item.resolve(records[i]!));
      } catch (error) {
        for (const item of batch) item.reject(error);
      }
      if (pending.length > 0) await nextTurn();
    }
    draining = undefined;
  };

  return {
    async record(entry) {
      const fields = prepare(entry, clock.now());
      return new Promise<AuditRecord>((resolve, reject) => {
        pending.push({ fields, resolve, reject });
        draining ??= drain();
      });
    },
    async flush() {
      while (draining !== undefined) await draining;
    },
  };
}

function prepare(entry: AuditEntry, at: number): Omit<AuditBody, 'seq'> {
  const owner = 'audit.record';
  if (typeof entry !== 'object' || entry === null) throw invalidOption(owner, 'entry', 'an object', entry);
  const fields: Omit<AuditBody, 'seq'> = {
    v: AUDIT_BODY_VERSION,
    at,
    actor: redactText(text(owner, 'actor', entry.actor)),
    action: redactText(text(owner, 'action', entry.action)),
    target: redactText(text(owner, 'target', entry.target)),
    operation_id: optionalText(owner, 'operationId', entry.operationId),
    correlation_id: optionalText(owner, 'correlationId', entry.correlationId),
    data: redact(entry.data ?? null) ?? null,
  };
  // Fails here, for this caller alone, rather than inside the append of a whole batch.
  canonicalJson(fields);
  return fields;
}

function text(owner: string, option: string, value: unknown): string {
  if (typeof value === 'string' && value !== '') return value;
  throw invalidOption(owner, option, 'a non-empty string', value);
}

function optionalText(owner: string, option: string, value: unknown): string | null {
  return value === undefined || value === null ? null : redactText(text(owner, option, value));
}

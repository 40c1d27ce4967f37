import { createHash } from 'node:crypto';

/**
 * What a service remembers under an `Idempotency-Key`: the request's fingerprint, whether it is still
 * running, and once completed the answer to replay and the id of what it created.
 */
export interface KeyRecord {
  key: string;
  fingerprint: string;
  state: 'in_progress' | 'completed';
  /** The kind of resource the request creates (`order`, `payment_intent`). */
  kind: string;
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  resourceId?: string;
}

/** The answer of {@link IdempotencyKeys.begin}. */
export type BeginResult =
  | { outcome: 'claimed'; record: KeyRecord }
  | { outcome: 'replay'; record: KeyRecord }
  | { outcome: 'mismatch'; record: KeyRecord }
  | { outcome: 'in_progress'; record: KeyRecord };

/**
 * The longest key accepted (Stripe's limit is 255 characters too). Keys are visible ASCII without spaces
 * inside, as the IETF httpapi Idempotency-Key draft's examples use.
 */
export const MAX_KEY_LENGTH = 255;
const KEY_PATTERN = /^[\x21-\x7e]+$/;

/** Whether `key` is an acceptable idempotency key. */
export function isValidKey(key: string): boolean {
  return key.length > 0 && key.length <= MAX_KEY_LENGTH && KEY_PATTERN.test(key);
}

/**
 * The fingerprint of a request: SHA-256 over method, path and the body with object keys sorted, so the
 * same body written in another key order is the same request.
 */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${sortedJson(body)}`)
    .digest('hex');
}

function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${sortedJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * In-memory idempotency records of one service, in the manner of Stripe: a key is claimed when a request
 * starts executing; its answer is stored when it completes and replayed to any later request with the same
 * key and fingerprint; a different fingerprint is a mismatch (422); a request arriving while the first is
 * still running is told so (409). A claim released before completing (the request was refused, abandoned or
 * failed) leaves the key free, so nothing is remembered for a request that had no effect. Records never
 * expire: this is a demo backend that lives as long as its process.
 */
export class IdempotencyKeys {
  private readonly records = new Map<string, KeyRecord>();

  /** Claims `key` for a new request, or says why it cannot be claimed. */
  begin(key: string, fingerprint: string, kind: string): BeginResult {
    const existing = this.records.get(key);
    if (existing !== undefined) {
      if (existing.fingerprint !== fingerprint) return { outcome: 'mismatch', record: existing };
      return existing.state === 'in_progress'
        ? { outcome: 'in_progress', record: existing }
        : { outcome: 'replay', record: existing };
    }
    const record: KeyRecord = { key, fingerprint, state: 'in_progress', kind };
    this.records.set(key, record);
    return { outcome: 'claimed', record };
  }

  /** Stores the answer of a claimed request; later requests with its key get it replayed. */
  complete(
    record: KeyRecord,
    answer: { status: number; body: unknown; headers?: Record<string, string>; resourceId: string },
  ): void {
    record.state = 'completed';
    record.status = answer.status;
    record.body = answer.body;
    record.headers = answer.headers ?? {};
    record.resourceId = answer.resourceId;
  }

  /** Frees the key of a claim that never completed; a no-op for completed or already released records. */
  release(record: KeyRecord): void {
    if (record.state === 'in_progress' && this.records.get(record.key) === record)
      this.records.delete(record.key);
  }

  /** The record under `key`, if any. */
  get(key: string): KeyRecord | undefined {
    return this.records.get(key);
  }
}

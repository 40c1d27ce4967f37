/**
 * The audit log contract (docs/operations.md#the-audit-log): an append-only chain of records, each
 * holding the hash of the one before. The store knows nothing of what a record says or how it is hashed:
 * `operations/` serializes the entry (canonical JSON, secrets redacted) and computes the hash (SHA-256, or
 * HMAC-SHA-256 when keyed) in a {@link AuditSealer} that the store calls inside its transaction, with the
 * record's `seq` and the previous record's hash. Appends are serialized (one writer at a time, across
 * processes too), so `seq` is gapless from 1 and the chain never forks. Records are never updated or deleted
 * by Breakwater. Implemented by the SQLite and PostgreSQL stores as `store.audit`; one contract suite
 * (`audit-contract.ts`) runs on both.
 */

/** The `prevHash` of the first record (64 zeros). */
export const AUDIT_GENESIS_HASH = '0'.repeat(64);

/** Default and largest page of {@link AuditStore.read}. */
export const AUDIT_READ_DEFAULT_LIMIT = 1000;
export const AUDIT_READ_MAX_LIMIT = 10_000;

/** A record as stored: exactly the bytes that were hashed, so any edited byte shows. */
export interface AuditRecord {
  /** 1, 2, 3, … in append order, gapless. */
  seq: number;
  /** The serialized entry (the sealer's text, stored verbatim). */
  body: string;
  /** `hash` of record `seq - 1`, or {@link AUDIT_GENESIS_HASH} for `seq` 1. */
  prevHash: string;
  /** The sealer's hash of this record (1..128 characters). */
  hash: string;
}

/**
 * Serializes one entry once its place in the chain is known; called synchronously inside the append's
 * transaction. Must be pure and fast (no I/O); a throw rolls the whole append back.
 */
export type AuditSealer = (seq: number, prevHash: string) => { body: string; hash: string };

/** Storage of the audit chain. Every method is one atomic step; after `close()` every method rejects with an Error. */
export interface AuditStore {
  /**
   * Appends one record per sealer, in order, in one transaction: reads the head (`seq`, `hash`), then calls
   * each sealer with the next `seq` and the running previous hash. Resolves once durable.
   * @throws whatever a sealer throws, and RangeError for a sealer result whose `body` is not a string or
   *   `hash` is not 1..128 characters; nothing written.
   */
  append(sealers: readonly AuditSealer[]): Promise<AuditRecord[]>;

  /** Records with `seq > afterSeq` (default 0), in seq order, at most `limit` (default 1000, max 10 000). */
  read(afterSeq?: number, limit?: number): Promise<AuditRecord[]>;

  /** The last record, or undefined when the chain is empty. */
  head(): Promise<AuditRecord | undefined>;
}

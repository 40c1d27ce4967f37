/** Checking the audit chain end to end (`breakwater audit verify`; docs/operations.md#the-audit-log). */
import { canonicalJson, finite, POSITIVE_INTEGER } from '../../core/index.js';
import {
  AUDIT_GENESIS_HASH,
  AUDIT_READ_DEFAULT_LIMIT,
  AUDIT_READ_MAX_LIMIT,
  type AuditRecord,
  type AuditStore,
} from '../../store/index.js';
import { AUDIT_BODY_VERSION, auditHash, hmacKeyBytes, type AuditHmacKey } from './seal.js';

/** Options of {@link verifyAudit}. */
export interface VerifyAuditOptions {
  /** The key the chain was written with (see `createAuditLog`); omit for an unkeyed chain. */
  hmacKey?: AuditHmacKey;
  /** Records read per page (default 1000, at most 10 000): memory stays bounded whatever the chain's length. */
  pageSize?: number;
}

/** What {@link verifyAudit} found. */
export type AuditVerification =
  /** Every record checked out; `headSeq` 0 and `headHash` 64 zeros for an empty chain. */
  | { ok: true; records: number; headSeq: number; headHash: string }
  /**
   * `brokenSeq` is the first record that fails (for a gap, the missing seq); `records` how many before it
   * checked out; `reason` a sentence saying what is wrong with it.
   */
  | { ok: false; records: number; brokenSeq: number; reason: string };

/**
 * Walks the whole chain in seq order, page by page, and checks each record:
 * 1. its seq follows the previous one (1, 2, 3, … without gaps);
 * 2. its `prevHash` is the previous record's `hash` (64 zeros for seq 1);
 * 3. its `hash` is the hash of its stored body bytes (`auditHash`: SHA-256, or HMAC-SHA-256 with `hmacKey`);
 * 4. its body is the canonical JSON of a version-1 body whose `seq` is the record's.
 * Editing any byte of a record's body, hash or prev_hash fails at that record: a body or hash edit at check 3,
 * a prev_hash edit at check 2. A truncated tail cannot be seen from the chain alone: keep `headSeq` and
 * `headHash` somewhere else and compare.
 *
 * @throws RangeError for a bad option or an HMAC key shorter than 16 bytes; the store's error when it cannot
 *   be read.
 */
export async function verifyAudit(
  store: Pick<AuditStore, 'read'>,
  options: VerifyAuditOptions = {},
): Promise<AuditVerification> {
  const key = hmacKeyBytes('verifyAudit', options.hmacKey);
  const pageSize = finite('verifyAudit', 'pageSize', options.pageSize ?? AUDIT_READ_DEFAULT_LIMIT, {
    ...POSITIVE_INTEGER,
    max: AUDIT_READ_MAX_LIMIT,
  });
  let headSeq = 0;
  let headHash = AUDIT_GENESIS_HASH;
  while (true) {
    const page = await store.read(headSeq, pageSize);
    if (page.length === 0) return { ok: true, records: headSeq, headSeq, headHash };
    for (const record of page) {
      const reason = check(record, headSeq + 1, headHash, key);
      if (reason !== undefined) {
        return { ok: false, records: headSeq, brokenSeq: headSeq + 1, reason };
      }
      headSeq = record.seq;
      headHash = record.hash;
    }
  }
}

/** Why `record` breaks the chain, or undefined when it holds. */
function check(
  record: AuditRecord,
  seq: number,
  prevHash: string,
  key: Uint8Array | undefined,
): string | undefined {
  if (record.seq !== seq) {
    return record.seq > seq
      ? `Record ${seq} is missing: the chain goes from record ${seq - 1} to record ${record.seq}.`
      : `Record ${seq} is missing: record ${record.seq} comes again after record ${seq - 1}.`;
  }
  if (record.prevHash !== prevHash) {
    return seq === 1
      ? 'Record 1 does not start the chain: its prev_hash is not the genesis hash (64 zeros).'
      : `Record ${seq} does not follow record ${seq - 1}: its prev_hash is not that record's hash.`;
  }
  if (auditHash(record.prevHash, record.body, key) !== record.hash) {
    return `Record ${seq} has been altered: its hash does not match its body${
      key === undefined ? '' : ' under this key'
    } (its body or hash was edited${key === undefined ? ', or the log is HMAC-keyed' : ', or the key is wrong'}).`;
  }
  let body: unknown;
  try {
    body = JSON.parse(record.body);
  } catch {
    return `Record ${seq} has a body that is not JSON.`;
  }
  const fields = body as { v?: unknown; seq?: unknown } | null;
  if (typeof fields !== 'object' || fields === null || fields.v !== AUDIT_BODY_VERSION) {
    return `Record ${seq} has a body that is not a version ${AUDIT_BODY_VERSION} audit body.`;
  }
  if (fields.seq !== seq) return `Record ${seq} has a body that names seq ${String(fields.seq)}.`;
  if (canonicalJson(body) !== record.body) return `Record ${seq} has a body that is not canonical JSON.`;
  return undefined;
}

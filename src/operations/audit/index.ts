/**
 * The audit log (docs/operations.md#the-audit-log): append-only records, each holding the hash of the
 * one before (SHA-256, HMAC-keyed when configured), secrets redacted; `verifyAudit` names the first broken
 * record.
 */
export { createAuditLog, type AuditEntry, type AuditLog, type AuditLogOptions } from './log.js';
export { REDACTED, isSecretKey, redact, redactText } from './redact.js';
export {
  AUDIT_BODY_VERSION,
  MIN_AUDIT_HMAC_KEY_BYTES,
  auditHash,
  type AuditBody,
  type AuditHmacKey,
} from './seal.js';
export { verifyAudit, type AuditVerification, type VerifyAuditOptions } from './verify.js';

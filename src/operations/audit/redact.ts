/**
 * Redaction of audit data. It lives in core (`core/redact.ts`) so that log lines written by every folder are
 * masked by the same rules as the audit log; this module keeps the audit's import path.
 */
export { REDACTED, TOO_DEEP, isSecretKey, redact, redactText } from '../../core/index.js';

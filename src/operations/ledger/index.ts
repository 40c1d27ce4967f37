export { LEDGER_DEFAULTS } from './defaults.js';
export { OperationLedger } from './ledger.js';
export { requestReconcile } from './reconcile.js';
export { UNKNOWN_SENTENCE, operationError, type OperationErrorTexts } from './result.js';
export type {
  AnyOperationAction,
  ExecuteOptions,
  LedgerLog,
  NeedsAttentionEvent,
  OperationAuditSink,
  OperationOutcomeEvent,
  OperationLedgerOptions,
  LookupResult,
  OperationAction,
  OperationCallContext,
  OperationResult,
} from './types.js';

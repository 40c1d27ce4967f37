/** Defaults of every {@link AnyOperationAction} and of the ledger. */
export const LEDGER_DEFAULTS = {
  recoveryMs: 15 * 60_000,
  attemptTimeoutMs: 60_000,
  maxAttempts: 3,
  /** How soon an `unknown` operation is looked up again, ms. */
  checkEveryMs: 5_000,
} as const;

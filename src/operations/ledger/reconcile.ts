import type { OperationRecord, OperationStore } from '../../store/index.js';

/**
 * Asks whichever process runs the operation's action (its recovery loop) to look it up now, through the
 * store alone (`breakwater ops reconcile` needs no app loaded): sets `nextCheckAt` to now. An operation in
 * `needs_attention` is then looked up and settled on a confirmed result, never resent.
 * @returns the record as scheduled; undefined when the id is unknown. A settled operation is returned as it
 *   is (nothing to do).
 */
export async function requestReconcile(
  store: OperationStore,
  operationId: string,
  now: number,
): Promise<OperationRecord | undefined> {
  for (let tries = 0; tries < 5; tries++) {
    const record = await store.get(operationId);
    if (record === undefined || record.settledAt !== null) return record;
    const updated = await store.update(record.id, record.version, { nextCheckAt: now });
    if (updated !== undefined) return updated;
  }
  return store.get(operationId);
}

import { v7 as uuidv7 } from 'uuid';

/**
 * A new sortable id: a UUIDv7 (RFC 9562, section 5.7; millisecond timestamp first, monotonic within a
 * process), optionally prefixed: `newId('job')` → `job_019a2c3e-...`. Ids made later sort after earlier ones
 * as plain strings.
 */
export function newId(prefix?: string): string {
  const id = uuidv7();
  return prefix === undefined ? id : `${prefix}_${id}`;
}

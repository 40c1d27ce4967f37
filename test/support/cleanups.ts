/** Per-test cleanups and temporary SQLite paths, shared by the end-to-end and webhook suites. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/** Cleanups of the running test, run in reverse order after it (also when it failed); one failing does not stop the rest. */
export function useCleanups(): (cleanup: () => unknown) => void {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await Promise.resolve()
        .then(cleanup)
        .catch(() => undefined);
    }
  });
  return (cleanup) => void cleanups.push(cleanup);
}

/** A fresh temporary directory (`<prefix>-…`) with an SQLite path in it; removed after the test. */
export function tempDb(defer: (cleanup: () => unknown) => void, prefix = 'breakwater-test'): string {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  defer(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'breakwater.db');
}

/** The library's log, seen by tests. */
import { setLogger } from '../../src/entries/index.js';

/**
 * Collects the messages of every warning the library logs from now on (info and errors are dropped);
 * `defer` receives the cleanup that puts the previous logger back.
 */
export function captureWarnings(defer: (cleanup: () => unknown) => void): string[] {
  const messages: string[] = [];
  const restore = setLogger({
    info: () => undefined,
    warn: (_fields, message) => messages.push(message),
    error: () => undefined,
  });
  defer(() => restore.dispose());
  return messages;
}

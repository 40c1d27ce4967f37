/** Helpers for this folder's tests: JSON over real HTTP and waiting for a condition. */

/** A parsed HTTP answer: status, headers and the body parsed as JSON (undefined when empty). */
export interface JsonAnswer {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read fields freely
}

/** Sends `body` as JSON (when given) with `headers` and parses the answer. */
export async function call(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<JsonAnswer> {
  const init: RequestInit = { method, headers: { ...headers }, signal };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const response = await fetch(url, init);
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? undefined : JSON.parse(text),
  };
}

/** Resolves once `condition()` is true, checking every 2 ms; rejects after `timeoutMs` (default 2000). */
export async function until(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** A random source that returns `values` in turn, then throws (a test drew more than it planned). */
export function sequence(...values: number[]): () => number {
  let next = 0;
  return () => {
    const value = values[next++];
    if (value === undefined) throw new Error('the random sequence is exhausted');
    return value;
  };
}

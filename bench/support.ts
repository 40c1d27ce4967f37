/** Helpers the queue benchmarks share: integer arguments, a reachability probe, a one-shot PostgreSQL client. */
import { connect } from 'node:net';
import pg from 'pg';

/** `--name=N` from the command line: an integer >= `min` (default 1), or `fallback` when absent. */
export function intArg(name: string, fallback: number, min = 1): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (arg === undefined) return fallback;
  const value = Number(arg.slice(name.length + 3));
  if (!Number.isInteger(value) || value < min) throw new RangeError(`--${name} must be an integer >= ${min}`);
  return value;
}

/** Resolves with undefined when a TCP connection opens within a second, or with the reason it did not. */
export function reachable(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (reason?: string) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(1000, () => done(`${host}:${port} did not answer within 1 s`));
    socket.once('connect', () => done());
    socket.once('error', (error) => done(`${host}:${port} unreachable (${error.message})`));
  });
}

/** Runs `fn` with a fresh client of the database at `url`, closed afterwards. */
export async function withPg<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

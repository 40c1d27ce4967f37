/** Child processes for tests that need a whole process (a SIGKILL, an exit, a second connection). */
import { spawn, type ChildProcess } from 'node:child_process';

/** A running child: its process, how it ended, and what it printed so far. */
export interface SpawnedScript {
  readonly proc: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  out(): string;
  err(): string;
}

/**
 * Runs `node` on `file` (with `--import tsx` when `tsx`), in the current directory, stdout and stderr
 * collected; stdin is a pipe when `stdin` (else ignored). `defer` receives its cleanup: a SIGKILL if it is
 * still running, then its exit.
 */
export function spawnScript(
  file: string,
  options: { tsx: boolean; stdin?: boolean; env?: Record<string, string> },
  defer: (cleanup: () => unknown) => void,
): SpawnedScript {
  const proc = spawn(process.execPath, options.tsx ? ['--import', 'tsx', file] : [file], {
    cwd: process.cwd(),
    stdio: [options.stdin === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  // 'close', not 'exit': 'exit' can come before the last of the child's output has been read, and a caller
  // that counts the child's acknowledgements after a SIGKILL would miss the last ones.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('close', (code, signal) => resolve({ code, signal })),
  );
  defer(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    return exited;
  });
  return { proc, exited, out: () => out, err: () => err };
}

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

/** A long-running command whose output is read as it comes (see {@link startCommand}). */
export interface RunningCommand {
  readonly child: ChildProcess;
  /** The exit code once it has closed (null when a signal ended it). */
  readonly exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
  /** The first match of `pattern` in stdout once printed; rejects if it exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/**
 * Runs `command args` in `cwd` with exactly `env`, stdout and stderr collected. `group`: a process group of
 * its own (as a shell's job), so that the cleanup `defer` receives (a SIGKILL if still running, then its
 * close) also ends the children it spawned (npx runs the command as its child).
 */
export function startCommand(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; group?: boolean },
  defer: (cleanup: () => unknown) => void,
): RunningCommand {
  const group = options.group === true;
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: group,
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  defer(async () => {
    try {
      if (group) process.kill(-child.pid!, 'SIGKILL');
      else if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    } catch {
      // it has already ended
    }
    await exited;
  });
  return {
    child,
    exited,
    stdout: () => out,
    stderr: () => err,
    async waitFor(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = pattern.exec(out);
        if (match !== null) return match;
        if (child.exitCode !== null)
          throw new Error(`exited ${child.exitCode} without ${pattern}:\n${out}\n${err}`);
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${pattern} in the output:\n${out}\n${err}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
  };
}

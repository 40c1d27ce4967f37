import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
let child: ChildProcessWithoutNullStreams | undefined;

afterEach(() => {
  if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
  child = undefined;
});

function run(env: Record<string, string>): ChildProcessWithoutNullStreams {
  child = spawn(process.execPath, ['--import', 'tsx', MAIN], { env: { ...process.env, ...env } });
  return child;
}

function exitCode(proc: ChildProcessWithoutNullStreams): Promise<number | null> {
  return new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
}

describe('main.ts', () => {
  it('prints the three URLs, serves on them, and exits 0 on SIGTERM', async () => {
    const proc = run({ GIFT_PORT: '0', COMMERCE_PORT: '0', ANALYTICS_PORT: '0' });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      proc.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('analytics')) resolve();
      });
      proc.once('exit', () => reject(new Error(`main.ts exited early: ${out}`)));
    });
    const urls = Object.fromEntries(
      out
        .trim()
        .split('\n')
        .map((line) => line.split(/\s+/) as [string, string]),
    );
    expect(Object.keys(urls)).toEqual(['gift', 'commerce', 'analytics']);
    expect((await fetch(`${urls.gift}/products/p001`)).status).toBe(200);
    expect((await fetch(`${urls.analytics}/events`)).status).toBe(200);
    const exited = exitCode(proc);
    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

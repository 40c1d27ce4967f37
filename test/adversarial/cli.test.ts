import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const version = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('the breakwater CLI', () => {
  it('demo runs to completion, exits 0 and ends with an idle bulkhead and a closed breaker', () => {
    const run = cli('demo');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    for (const phase of ['Phase 1', 'Phase 2', 'Phase 3', 'Phase 4', 'Phase 5']) {
      expect(run.stdout).toContain(phase);
    }
    expect(run.stdout).toMatch(/call \d: circuit_open in \d+ ms \(retry_after_ms \d+\)/);
    expect(run.stdout).toMatch(/call 8: timeout in \d+ ms/);
    expect(run.stdout.match(/: bulkhead_full in/g)).toHaveLength(2);
    expect(run.stdout.match(/burst \d: ok/g)).toHaveLength(5);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe(
      'Final state: {"breaker":"closed","bulkhead":{"name":"gift-service","inUse":0,"queued":0,"maxConcurrent":3,"maxQueue":2}}',
    );
  }, 60_000);

  it('--help and -h print the usage and exit 0', () => {
    for (const flag of ['--help', '-h']) {
      const run = cli(flag);
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(/^Usage: breakwater <command> \[options\]/);
      expect(run.stdout).toContain('demo');
      expect(run.stderr).toBe('');
    }
  }, 60_000);

  it('version and --version print the package version and exit 0', () => {
    for (const arg of ['version', '--version']) {
      const run = cli(arg);
      expect(run.status).toBe(0);
      expect(run.stdout).toBe(`${version}\n`);
    }
  }, 60_000);

  it('an unknown command exits 2 with a message on stderr', () => {
    const run = cli('bogus');
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain("breakwater: unknown command 'bogus'");
  }, 60_000);

  it('an unknown option exits 2 instead of being ignored', () => {
    const run = cli('--bogus');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--bogus');
  }, 60_000);

  it('demo --help prints help instead of running the demo', () => {
    const run = cli('demo', '--help');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: breakwater');
    expect(run.stdout).not.toContain('Phase 1');
  }, 60_000);
});

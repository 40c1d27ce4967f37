/**
 * How `npm run conformance` reads the official suite's report: the summary lines and the baseline verdict,
 * from output in the suite's own format (its colours included).
 */
import { describe, expect, it } from 'vitest';
import { report, scenarioReport } from './suite.js';

const red = (text: string) => `\u001b[31m${text}\u001b[0m`;
const yellow = (text: string) => `\u001b[33m${text}\u001b[0m`;

/** The tail of a `conformance server --suite all --expected-failures …` run, as the suite prints it. */
const SUMMARY = [
  '=== Running scenario: tools-list ===',
  'Checks:',
  '  tools-list  FAILURE  Failed: Bad Request: No valid session ID provided',
  '',
  '',
  '=== SUMMARY ===',
  '✗ server-stateless: 5 passed, 26 failed',
  '✗ tools-list: 0 passed, 2 failed',
  '✓ input-required-result-validate-input: 3 passed, 0 failed',
  '',
  'Total: 8 passed, 28 failed',
  '',
  yellow('Expected failures (in baseline):'),
  '  ~ server-stateless:sep-2575-server-implements-discover',
  '  ~ input-required-result-validate-input',
  '',
];
const BROKEN = [
  red('Stale baseline entries (now passing - remove from baseline):'),
  '  ✓ input-required-result-validate-input',
  '',
  red('Unexpected failures (not in baseline):'),
  '  ✗ tools-list',
  '',
  red('Unexpected failures detected: these are not in your expected-failures baseline.'),
  '',
];
const PASSED = ['\u001b[32mBaseline check passed: all failures are expected.\u001b[0m', ''];

describe("the suite's report", () => {
  it('reads the summary, the verdict, and what broke the baseline, without colours', () => {
    const { summary, verdict, problems } = report([...SUMMARY, ...BROKEN].join('\n'));
    expect(summary).toEqual([
      '✗ server-stateless: 5 passed, 26 failed',
      '✗ tools-list: 0 passed, 2 failed',
      '✓ input-required-result-validate-input: 3 passed, 0 failed',
      'Total: 8 passed, 28 failed',
    ]);
    expect(verdict.slice(0, 3)).toEqual([
      'Expected failures (in baseline):',
      '  ~ server-stateless:sep-2575-server-implements-discover',
      '  ~ input-required-result-validate-input',
    ]);
    expect(problems).toEqual([
      'Stale baseline entries (now passing - remove from baseline):',
      '  ✓ input-required-result-validate-input',
      'Unexpected failures (not in baseline):',
      '  ✗ tools-list',
      'Unexpected failures detected: these are not in your expected-failures baseline.',
    ]);
  });

  it('keeps only the closing sentence when every failure is expected', () => {
    const passing = [...SUMMARY, ...PASSED].join('\n');
    expect(report(passing).problems).toEqual(['Baseline check passed: all failures are expected.']);
  });

  it('finds nothing in output without a summary (a single-scenario run, or a crash)', () => {
    expect(
      report("Running client scenario 'tools-list' against server: http://127.0.0.1:1/mcp\nChecks:\n"),
    ).toEqual({
      summary: [],
      verdict: [],
      problems: [],
    });
    expect(report('=== SUMMARY ===\n✗ tools-list: 0 passed, 2 failed\n')).toEqual({
      summary: [],
      verdict: [],
      problems: [],
    });
  });
});

describe('scenarioReport', () => {
  it('reads the result line of a single --scenario run and what broke the baseline', () => {
    const output = [
      'Checks:',
      '',
      'Test Results:',
      'Passed: 24/28, 4 failed, 0 warnings',
      '',
      yellow('Expected failures (in baseline):'),
      '  ~ server-stateless:sep-2575-missing-capability-http-400',
      red('Unexpected failures detected: these are not in your expected-failures baseline.'),
      '  ✗ server-stateless:sep-2575-server-no-log-without-loglevel',
    ].join('\n');
    expect(scenarioReport(output)).toEqual({
      passed: 'Passed: 24/28, 4 failed, 0 warnings',
      problems: [
        'Unexpected failures detected: these are not in your expected-failures baseline.',
        '  ✗ server-stateless:sep-2575-server-no-log-without-loglevel',
      ],
    });
  });

  it('has no result for output without one', () => {
    expect(scenarioReport('error: unknown option')).toEqual({ problems: [] });
  });
});

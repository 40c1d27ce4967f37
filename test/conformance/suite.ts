/**
 * What `npm run conformance` (`run.ts`) knows about the official MCP conformance suite: the pinned versions,
 * the passes it runs, and how to read the suite's report from its output. Kept apart from `run.ts`, which
 * starts processes, so that the reading can be tested.
 */

/** The suite's version: pinned, so a new release of the suite is a deliberate change of the baselines. */
export const SUITE_VERSION = '0.2.0-alpha.12';
/** The Node that runs the suite when the running one is older than 22 (the current LTS line). */
export const NODE_VERSION = '24.22.3';
/** The oldest Node major the suite runs on (its `engines`: `>=22`). */
export const MIN_SUITE_NODE_MAJOR = 22;

/** A pass of the suite: which scenarios, at which wire, against which baseline. */
export interface Pass {
  name: 'all' | '2026-07-28';
  /** The suite's `server` arguments that select the pass's scenarios and wire. */
  select: string[];
}

export const PASSES: readonly Pass[] = [
  { name: 'all', select: ['--suite', 'all'] },
  { name: '2026-07-28', select: ['--suite', 'all', '--spec-version', '2026-07-28'] },
];

/** The suite's report of one run, as {@link report} reads it from the suite's output. */
export interface SuiteReport {
  /** One line per scenario, `✓|✗ <scenario>: N passed, M failed`, then `Total: N passed, M failed`. */
  summary: string[];
  /** The baseline verdict after the summary: expected failures, stale entries, unexpected failures. */
  verdict: string[];
  /**
   * The verdict without the list of expected failures (which repeats the summary's ✗ lines): what broke the
   * baseline, and the suite's closing sentence.
   */
  problems: string[];
}

/**
 * Reads the suite's own report from the output of a `conformance server` run over several scenarios (a
 * `--suite` run; a single `--scenario` run prints no summary): every field is empty when the output holds no
 * `=== SUMMARY ===` block.
 */
export function report(output: string): SuiteReport {
  // The suite colours its verdict with ANSI codes whatever the environment says; the lines are kept plain.
  // eslint-disable-next-line no-control-regex -- the escape character is what is matched
  const lines = output.replace(/\u001b\[[0-9;]*m/g, '').split('\n');
  const from = lines.findIndex((line) => line.startsWith('=== SUMMARY ==='));
  const total = lines.findIndex((line, i) => i > from && line.startsWith('Total: '));
  if (from < 0 || total < 0) return { summary: [], verdict: [], problems: [] };
  const summary = lines.slice(from + 1, total + 1).filter((line) => line.trim() !== '');
  const verdict = lines.slice(total + 1).filter((line) => line.trim() !== '');
  const problems = verdict.filter((line) => !/^\s+~ /.test(line) && !line.startsWith('Expected failures'));
  return { summary, verdict, problems };
}

/**
 * The suite's protocol-level scenarios run against GiftGenius itself (pass `giftgenius`), one `--scenario`
 * invocation each (the suite has no suite of them), with their wire: what an app built on Breakwater gets from
 * the gateway whatever its tools. The `tasks-*` scenarios are not here: they call the suite's fixture tools by
 * name (`greet`, `slow_compute`, …), which only the fixture app serves.
 */
export const GIFTGENIUS_SCENARIOS: readonly { scenario: string; select: string[] }[] = [
  { scenario: 'server-stateless', select: ['--spec-version', '2026-07-28'] },
  { scenario: 'http-header-validation', select: [] },
  { scenario: 'dns-rebinding-protection', select: [] },
];

/**
 * Reads a single `--scenario` run's result line (`Passed: 14/14, 0 failed, 0 warnings`) and the baseline
 * verdict after it; `passed` is undefined when the output holds no such line.
 */
export function scenarioReport(output: string): { passed?: string; problems: string[] } {
  // eslint-disable-next-line no-control-regex -- the escape character is what is matched
  const lines = output.replace(/\u001b\[[0-9;]*m/g, '').split('\n');
  const at = lines.findIndex((line) => line.startsWith('Passed: '));
  if (at < 0) return { problems: [] };
  const verdict = lines.slice(at + 1).filter((line) => line.trim() !== '');
  const problems = verdict.filter((line) => !/^\s+~ /.test(line) && !line.startsWith('Expected failures'));
  return { passed: lines[at], problems };
}

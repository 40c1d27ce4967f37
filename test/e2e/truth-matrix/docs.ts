/**
 * docs/giftgenius.md's fault × tool table, generated from the matrix's expectations. `truth-matrix.test.ts`
 * checks that the docs hold exactly this table; after changing an expectation, rewrite it with
 * `node --import tsx test/e2e/truth-matrix/docs.ts`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { CELLS, SENTENCE_RULES, faultOf, type Cell, type Failure, type ToolName } from './expectations.js';

export const DOCS_PATH = fileURLToPath(new URL('../../../docs/giftgenius.md', import.meta.url));
export const BEGIN = '<!-- truth-matrix: generated from test/e2e/truth-matrix/expectations.ts -->';
export const END = '<!-- /truth-matrix -->';

const TOOL_LABEL: Record<ToolName, string> = {
  suggest_gifts: '`suggest_gifts`',
  checkout: '`checkout`',
  suggest_and_checkout: '`suggest_and_checkout`',
  start_deep_analysis: '`start_deep_analysis` → `get_job_status`',
};

function told(cell: Cell): string {
  const t = cell.told;
  if (t.ok) {
    if (cell.tool === 'start_deep_analysis') return 'completed: the gifts';
    return t.reconciled === true ? 'the order, found by its lookup (`reconciled: true`)' : 'the result';
  }
  return `\`${t.code}\` (\`${t.category}\`)`;
}

function sentence(t: Failure): string {
  const kind = `${t.kind}: "${SENTENCE_RULES[t.kind].says}`;
  const end = t.waitMs !== null ? '; try again in about N seconds"' : '"';
  const lost =
    t.outcome === 'unknown' ? '; `outcome: unknown`, `operation_id`, lookup; resumed: one order' : '';
  return `${kind}${end}${lost}`;
}

function wait(t: Failure): string {
  if (t.waitMs === null) return '—';
  const source = t.category === 'circuit_open' ? "the breaker's remaining time" : 'Retry-After';
  return `${t.waitMs.toLocaleString('en-US').replace(/,/g, ' ')} (${source})`;
}

/** The table as markdown, one row per cell, in the expectations' order (not yet formatted). */
export function matrixTable(): string {
  const rows = [
    '| fault | tool | what the model is told | sentence | `retry_after_ms` | how fast |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const cell of CELLS) {
    const t = cell.told;
    const cols = [
      faultOf(cell.fault).label,
      TOOL_LABEL[cell.tool],
      told(cell),
      t.ok ? '—' : sentence(t),
      t.ok ? '—' : wait(t),
      cell.howFast,
    ];
    rows.push(`| ${cols.join(' | ')} |`);
  }
  return rows.join('\n');
}

/** The docs section between the markers, formatted as the repository's prettier formats docs. */
export async function formattedTable(): Promise<string> {
  const options = (await prettier.resolveConfig(DOCS_PATH)) ?? {};
  return (await prettier.format(matrixTable(), { ...options, parser: 'markdown' })).trimEnd();
}

/** What the docs hold between the markers now. @throws Error when the markers are missing. */
export function documentedTable(): string {
  const text = readFileSync(DOCS_PATH, 'utf8');
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${DOCS_PATH} lacks the ${BEGIN} … ${END} markers`);
  return text.slice(begin + BEGIN.length, end).trim();
}

async function rewrite(): Promise<void> {
  const text = readFileSync(DOCS_PATH, 'utf8');
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${DOCS_PATH} lacks the ${BEGIN} … ${END} markers`);
  const table = await formattedTable();
  writeFileSync(DOCS_PATH, `${text.slice(0, begin + BEGIN.length)}\n\n${table}\n\n${text.slice(end)}`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await rewrite();

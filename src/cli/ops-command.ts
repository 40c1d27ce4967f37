/**
 * `breakwater ops list|show|reconcile`: the operation ledger from a terminal, straight against the store.
 * `reconcile` needs no app loaded: it schedules the operation for a lookup now, and the recovery loop of a
 * running gateway or worker that defines its action performs it (docs/operations.md).
 */
import { isBreakwaterError } from '../core/index.js';
import { reconcileOperation } from '../server/index.js';
import { OPERATION_STATES, type OperationRecord, type Store } from '../store/index.js';
import { CliError, EXIT, openExistingStoreForCli } from './context.js';
import { iso, short, table } from './format.js';
import { choiceOptions, integerOption, parseSubcommand } from './subcommand.js';
import { auditCliAction } from '../gateway/operations-runtime.js';

export const OPS_USAGE = `Usage: breakwater ops <list|show|reconcile> [options]

Subcommands:
  list               the newest operations first
  show <id>          one operation with its evidence
  reconcile <id>     look an unsettled operation up now (by a running gateway or worker that defines its
                     action) and wait for the answer; never resends a request past its recovery deadline

Options:
  --db <url>         the store: postgres://… or a SQLite path (default: $DATABASE_URL, $BREAKWATER_DB,
                     then ./data/breakwater.db)
  --state <state>    list: only this state (${OPERATION_STATES.join(', ')}); may be repeated
  --action <name>    list: only this action, e.g. commerce.create_order
  --limit <n>        list: at most n operations (default 20, at most 1000)
  --wait <ms>        reconcile: how long to wait for the lookup (default 30000)
  --json             print JSON instead of text
  -h, --help         show this help`;

/** Runs `breakwater ops ...`; resolves with the exit code. Output goes to `out`. */
export async function runOpsCommand(
  argv: string[],
  out: (line: string) => void = console.log,
): Promise<number> {
  const parsed = parseSubcommand(
    argv,
    {
      command: 'ops',
      usage: OPS_USAGE,
      subcommands: { list: [], show: ['an operation id'], reconcile: ['an operation id'] },
      options: {
        state: { type: 'string', multiple: true },
        action: { type: 'string' },
        limit: { type: 'string' },
        wait: { type: 'string' },
      },
    },
    out,
  );
  if ('exit' in parsed) return parsed.exit;
  const { sub, args, values } = parsed;
  const id = args[0];
  const states = choiceOptions('--state', values.state, OPERATION_STATES);
  const limit = integerOption('--limit', values.limit, 20, 1, 1000);
  const waitMs = integerOption('--wait', values.wait, 30_000, 0, 600_000);
  const json = values.json === true;

  const store = await openExistingStoreForCli(values.db);
  try {
    if (sub === 'list') {
      const records = await store.operations.list({
        states: states.length > 0 ? states : undefined,
        action: values.action,
        limit,
      });
      out(json ? JSON.stringify(records, null, 2) : formatTable(records));
      return EXIT.ok;
    }
    if (sub === 'show') {
      const record = await store.operations.get(id!);
      if (record === undefined) throw new CliError(`there is no operation ${id}`);
      out(json ? JSON.stringify(record, null, 2) : formatOperation(record));
      return EXIT.ok;
    }
    return await reconcile(store, id!, waitMs, json, out);
  } finally {
    await store.close();
  }
}

/**
 * Schedules the lookup, then polls until the operation settles or was looked at, or `waitMs` passes: the
 * admin API's own action (`POST /admin/api/operations/:id/reconcile`), so both behave alike.
 */
async function reconcile(
  store: Store,
  id: string,
  waitMs: number,
  json: boolean,
  out: (line: string) => void,
): Promise<number> {
  const { outcome, scheduled, record } = await reconcileOperation(store.operations, id, {
    waitMs,
    onScheduled: (found) =>
      auditCliAction(store, {
        action: 'admin.operation_reconcile',
        target: found.target,
        operationId: id,
        data: { state: found.state },
      }),
  }).catch((error: unknown) => {
    throw isBreakwaterError(error) && error.code === 'not_found'
      ? new CliError(`there is no operation ${id}`)
      : error;
  });
  if (json) {
    out(JSON.stringify(record, null, 2));
  } else if (outcome === 'settled') {
    out(`operation ${id} is ${record.state}${record.state === scheduled.state ? '' : ' after the lookup'}`);
    out(formatOperation(record));
  } else if (outcome === 'looked_up') {
    out(`operation ${id} was looked up and is still ${record.state}`);
    out(formatOperation(record));
  } else {
    out(
      `operation ${id} is still ${record.state}: no running gateway or worker looked it up within ${waitMs} ms ` +
        `(one must run with the app that defines ${record.action})`,
    );
  }
  return outcome === 'settled' ? EXIT.ok : EXIT.failed;
}

function formatTable(records: OperationRecord[]): string {
  if (records.length === 0) return 'no operations';
  return table([
    ['ID', 'ACTION', 'STATE', 'ATTEMPTS', 'CREATED', 'OBSERVATION'],
    ...records.map((r) => [
      r.id,
      r.action,
      r.state,
      String(r.attempts),
      iso(r.createdAt),
      r.observation ?? '-',
    ]),
  ]);
}

function formatOperation(record: OperationRecord): string {
  const lines = [
    `id:             ${record.id}`,
    `action:         ${record.action}`,
    `target:         ${record.target}`,
    `state:          ${record.state}`,
    `attempts:       ${record.attempts}`,
    `retry allowed:  ${record.retryAllowed ? 'yes (after a lookup found nothing)' : 'no'}`,
    `observation:    ${record.observation ?? '-'}`,
    `created:        ${iso(record.createdAt)}`,
    `updated:        ${iso(record.updatedAt)}`,
    `deadline:       ${iso(record.recoveryDeadlineAt)}`,
    `next check:     ${iso(record.nextCheckAt)}`,
    `settled:        ${iso(record.settledAt)}`,
    `lookup:         ${record.reconcile === null ? '-' : `${record.reconcile.method} ${record.reconcile.path}`}`,
    `request:        ${short(record.request)}`,
  ];
  if (record.result !== null) lines.push(`result:         ${short(record.result)}`);
  if (record.error !== null) lines.push(`error:          ${short(record.error)}`);
  if (record.evidence !== null) lines.push(`evidence:       ${short(record.evidence, 600)}`);
  return lines.join('\n');
}

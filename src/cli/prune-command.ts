/**
 * `breakwater prune [--dry-run]`: removes (or counts) what is past its retention, straight against the store,
 * with the retentions the gateway uses (the `BREAKWATER_RETAIN_*` variables, else the defaults). The gateway
 * prunes by itself every few minutes; this is for a look before the first run, or a store no gateway serves.
 */
import { parseArgs } from 'node:util';
import {
  PRUNE_BATCH,
  PRUNE_KINDS,
  retentionPolicy,
  type PruneKind,
  type PruneReport,
  type RetentionPolicy,
  type VacuumMode,
} from '../store/index.js';
import { CliError, EXIT, openExistingStoreForCli } from './context.js';
import {
  PRUNE_VACUUM_ENV,
  RETENTION_ENV,
  retentionFromEnv,
  vacuumFromEnv,
} from '../gateway/retention-env.js';
import { integerOption } from './subcommand.js';

export const PRUNE_USAGE = `Usage: breakwater prune [options]

Removes what is older than its retention: finished jobs with their events, webhook deliveries whose job
finished, stream events, expired idempotency records and settled operations. Pending and running jobs,
unsettled operations and the audit log are never removed. Runs in batches, safe beside a running gateway
(which prunes by itself every 5 minutes).

Options:
  --dry-run          count what would be removed, remove nothing
  --batch-size <n>   rows per transaction (default ${PRUNE_BATCH.default}, ${PRUNE_BATCH.min} to ${PRUNE_BATCH.max})
  --db <url>         the store: postgres://… or a SQLite path (default: $DATABASE_URL, $BREAKWATER_DB,
                     then ./data/breakwater.db)
  --json             print the report as JSON
  -h, --help         show this help

Environment (a duration such as 90s, 30m, 12h, 7d, or forever; the same variables as 'breakwater serve'):
  ${RETENTION_ENV.jobsMs.padEnd(32)} completed and canceled jobs (default 7d)
  ${RETENTION_ENV.deadLettersMs.padEnd(32)} failed jobs, the dead letter (default 30d)
  ${RETENTION_ENV.webhookInboxMs.padEnd(32)} webhook deliveries, after their job finished (default 7d)
  ${RETENTION_ENV.streamEventsMs.padEnd(32)} stream events kept for SSE replay (default 1h)
  ${RETENTION_ENV.operationsMs.padEnd(32)} settled operations (default 30d)
  Idempotency records go at their own expiry.
  ${PRUNE_VACUUM_ENV.padEnd(32)} PostgreSQL: after the prune, VACUUM the pruned tables autovacuum does not
  ${''.padEnd(32)} look after (auto, the default), all of them (always) or none (never)`;

/** How each kind is named in the text report. */
const KIND_NAMES: Record<PruneKind, string> = {
  jobs: 'jobs',
  jobEvents: 'job events',
  webhookInbox: 'webhook deliveries',
  streamEvents: 'stream events',
  idempotency: 'idempotency records',
  operations: 'operations',
};

/** Runs `breakwater prune …`; resolves with the exit code. Output goes to `out`. */
export async function runPruneCommand(
  argv: string[],
  out: (line: string) => void = console.log,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        'dry-run': { type: 'boolean' },
        'batch-size': { type: 'string' },
        db: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new CliError(`${(error as Error).message}\n\n${PRUNE_USAGE}`, EXIT.usage);
  }
  if (values.help === true) {
    out(PRUNE_USAGE);
    return EXIT.ok;
  }
  const batchSize = integerOption(
    '--batch-size',
    values['batch-size'],
    PRUNE_BATCH.default,
    PRUNE_BATCH.min,
    PRUNE_BATCH.max,
  );
  let retention: RetentionPolicy;
  let vacuum: VacuumMode | undefined;
  try {
    retention = retentionPolicy('prune', retentionFromEnv(env));
    vacuum = vacuumFromEnv(env);
  } catch (error) {
    throw new CliError((error as Error).message, EXIT.usage);
  }
  const dryRun = values['dry-run'] === true;
  const store = await openExistingStoreForCli(values.db);
  try {
    const report = await store.retention.prune({ dryRun, batchSize, retention });
    const vacuumed = dryRun ? [] : await store.retention.vacuum(report.removed, vacuum);
    out(
      values.json === true
        ? JSON.stringify({ ...report, vacuumed }, null, 2)
        : formatReport(report, vacuumed),
    );
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

/** The report as text: one line per kind, the counts aligned, then the tables vacuumed, if any. */
export function formatReport(report: PruneReport, vacuumed: readonly string[] = []): string {
  const head = report.dryRun
    ? `dry run at ${new Date(report.now).toISOString()}: would remove (nothing removed)`
    : `pruned at ${new Date(report.now).toISOString()}: removed`;
  const width = Math.max(...PRUNE_KINDS.map((kind) => String(report.removed[kind]).length));
  const lines = PRUNE_KINDS.map(
    (kind) => `  ${KIND_NAMES[kind].padEnd(20)} ${String(report.removed[kind]).padStart(width)}`,
  );
  if (vacuumed.length > 0) lines.push(`vacuumed: ${vacuumed.join(', ')}`);
  return [head, ...lines].join('\n');
}

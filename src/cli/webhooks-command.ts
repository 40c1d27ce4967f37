/**
 * `breakwater webhooks list|show|replay`: the webhook inbox from a terminal, straight against the store (no
 * server needs to run). Every subcommand takes `--db` and `--json`.
 */
import type { JobRecord } from '../store/index.js';
import type { InboxRecord } from '../store/index.js';
import { replayStoredWebhook } from '../webhooks/index.js';
import { CliError, EXIT, openExistingStoreForCli } from './context.js';
import { iso, table } from './format.js';
import { integerOption, parseSubcommand } from './subcommand.js';
import { auditCliAction } from '../gateway/operations-runtime.js';

export const WEBHOOKS_USAGE = `Usage: breakwater webhooks <list|show|replay> [options]

Subcommands:
  list                         the newest stored webhook events first
  show <source> <event-id>     one event with its body and its job
  replay <source> <event-id>   run the event's handler again (a new job; the old one is kept)

Options:
  --db <url>           the store: postgres://… or a SQLite path (default: $DATABASE_URL, $BREAKWATER_DB,
                       then ./data/breakwater.db)
  --source <name>      list: only this source
  --limit <n>          list: at most n events (default 20, at most 1000)
  --json               print JSON instead of text
  -h, --help           show this help`;

/** Runs `breakwater webhooks ...`; resolves with the exit code. Output goes to `out`. */
export async function runWebhooksCommand(
  argv: string[],
  out: (line: string) => void = console.log,
): Promise<number> {
  const parsed = parseSubcommand(
    argv,
    {
      command: 'webhooks',
      usage: WEBHOOKS_USAGE,
      subcommands: {
        list: [],
        show: ['a source', 'an event id'],
        replay: ['a source', 'an event id'],
      },
      options: { source: { type: 'string' }, limit: { type: 'string' } },
    },
    out,
  );
  if ('exit' in parsed) return parsed.exit;
  const { sub, args, values } = parsed;
  const [source, eventId] = args;
  const limit = integerOption('--limit', values.limit, 20, 1, 1000);
  const store = await openExistingStoreForCli(values.db);
  const json = values.json === true;
  try {
    if (sub === 'list') {
      const records = await store.listWebhooks({ source: values.source, limit });
      out(json ? JSON.stringify(records, null, 2) : formatTable(records));
      return EXIT.ok;
    }
    const missing = () => new CliError(`there is no ${source} webhook event ${eventId}`);
    if (sub === 'show') {
      const record = await store.getWebhook(source!, eventId!);
      if (record === undefined) throw missing();
      const job = await store.get(record.jobId);
      out(json ? JSON.stringify({ ...record, job: job ?? null }, null, 2) : formatRecord(record, job));
      return EXIT.ok;
    }
    const replayed = await replayStoredWebhook(store, source!, eventId!);
    if (replayed === undefined) throw missing();
    await auditCliAction(store, {
      action: 'admin.webhook_replay',
      target: `${source}/${eventId}`,
      data: { job_id: replayed.jobId },
    });
    out(
      json
        ? JSON.stringify(replayed, null, 2)
        : `${source} event ${eventId} replayed: job ${replayed.jobId} is pending (replay ${replayed.replays})`,
    );
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

function formatTable(records: InboxRecord[]): string {
  if (records.length === 0) return 'no webhook events';
  const rows = [
    ['SOURCE', 'EVENT ID', 'TYPE', 'RECEIVED', 'JOB', 'REPLAYS'],
    ...records.map((r) => [r.source, r.eventId, r.eventType, iso(r.receivedAt), r.jobId, String(r.replays)]),
  ];
  return table(rows);
}

function formatRecord(record: InboxRecord, job: JobRecord | undefined): string {
  const lines = [
    `source:      ${record.source}`,
    `event id:    ${record.eventId}`,
    `type:        ${record.eventType}`,
    `received:    ${iso(record.receivedAt)}`,
    `occurred:    ${iso(record.occurredAt)}`,
    `replays:     ${record.replays}`,
    `job:         ${record.jobId}${job === undefined ? ' (gone)' : ` ${job.status}, attempts ${job.attempts}/${job.maxAttempts}`}`,
  ];
  if (job?.error) lines.push(`last error:  ${job.error.code}: ${job.error.message}`);
  const body = record.body.length > 2_000 ? `${record.body.slice(0, 1_999)}…` : record.body;
  lines.push('body:', body);
  return lines.join('\n');
}

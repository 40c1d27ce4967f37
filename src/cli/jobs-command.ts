/**
 * `breakwater jobs list|show|cancel|retry`: the job queue from a terminal, straight against the store (no
 * server needs to run). Every subcommand takes `--db` and `--json`.
 */
import { createJobs } from '../jobs/index.js';
import { type JobRecord } from '../store/index.js';
import { JOB_STATUSES } from '../store/index.js';
import { CliError, EXIT, openExistingStoreForCli } from './context.js';
import { iso, short, table } from './format.js';
import { choiceOptions, integerOption, parseSubcommand } from './subcommand.js';
import { auditCliAction } from '../gateway/operations-runtime.js';
import { retryDeadLetter } from '../server/index.js';

export const JOBS_USAGE = `Usage: breakwater jobs <list|show|cancel|retry> [options]

Subcommands:
  list                 the newest jobs first
  show <job-id>        one job with its events
  cancel <job-id>      cancel a pending job, or ask a running one to stop
  retry <job-id>       put a failed (dead-lettered) job back in the queue

Options:
  --db <url>           the store: postgres://… or a SQLite path (default: $DATABASE_URL, $BREAKWATER_DB,
                       then ./data/breakwater.db)
  --status <status>    list: only pending, in_progress, completed, failed or canceled (repeatable)
  --type <type>        list: only this job type
  --limit <n>          list: at most n jobs (default 20, at most 1000)
  --json               print JSON instead of text
  -h, --help           show this help`;

/** Runs `breakwater jobs ...`; resolves with the exit code. Output goes to `out`. */
export async function runJobsCommand(
  argv: string[],
  out: (line: string) => void = console.log,
): Promise<number> {
  const parsed = parseSubcommand(
    argv,
    {
      command: 'jobs',
      usage: JOBS_USAGE,
      subcommands: { list: [], show: ['a job id'], cancel: ['a job id'], retry: ['a job id'] },
      options: {
        status: { type: 'string', multiple: true },
        type: { type: 'string' },
        limit: { type: 'string' },
      },
    },
    out,
  );
  if ('exit' in parsed) return parsed.exit;
  const { sub, args, values } = parsed;
  const id = args[0];
  const statuses = choiceOptions('--status', values.status, JOB_STATUSES);
  const limit = integerOption('--limit', values.limit, 20, 1, 1000);

  const store = await openExistingStoreForCli(values.db);
  const jobs = createJobs({ store });
  const json = values.json === true;
  try {
    if (sub === 'list') {
      const list = await jobs.list({
        status: statuses.length > 0 ? statuses : undefined,
        type: values.type,
        limit,
      });
      if (json) out(JSON.stringify(list, null, 2));
      else out(formatTable(list));
      return EXIT.ok;
    }
    const jobId = id!;
    if (sub === 'show') {
      const job = await jobs.get(jobId);
      if (job === undefined) throw new CliError(`there is no job ${jobId}`);
      const events = await store.events(jobId);
      if (json) out(JSON.stringify({ ...job, events }, null, 2));
      else
        out(
          formatJob(
            job,
            events.map((e) => `  #${e.seq} ${iso(e.timestamp)} ${e.type} ${short(e.payload)}`),
          ),
        );
      return EXIT.ok;
    }
    // retry: the admin API's own action (POST /admin/api/jobs/:id/retry), so both behave alike.
    const job = await (sub === 'cancel' ? jobs.cancel(jobId) : retryDeadLetter(jobs, jobId)).catch(
      (error: unknown) => {
        throw new CliError((error as Error).message);
      },
    );
    await auditCliAction(store, {
      action: sub === 'cancel' ? 'admin.job_cancel' : 'admin.job_retry',
      target: jobId,
    });
    if (json) out(JSON.stringify(job, null, 2));
    else if (sub === 'cancel') out(cancelMessage(job));
    else out(`job ${job.id} is pending again (attempts reset)`);
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

function cancelMessage(job: JobRecord): string {
  if (job.status === 'canceled') return `job ${job.id} is canceled`;
  if (job.status === 'in_progress') {
    return `job ${job.id} is running: cancel requested, its handler stops within one heartbeat`;
  }
  return `job ${job.id} had already finished (${job.status}); nothing to cancel`;
}

function formatTable(jobs: JobRecord[]): string {
  if (jobs.length === 0) return 'no jobs';
  const rows = [
    ['ID', 'TYPE', 'STATUS', 'ATTEMPTS', 'CREATED', 'UPDATED'],
    ...jobs.map((j) => [
      j.id,
      j.type,
      j.status,
      `${j.attempts}/${j.maxAttempts}`,
      iso(j.createdAt),
      iso(j.updatedAt),
    ]),
  ];
  return table(rows);
}

/** `jobs show`'s text: one field a line, times in ISO 8601 (the stored error's `retryAt` too), then the events. */
export function formatJob(job: JobRecord, events: string[]): string {
  const lines = [
    `id:        ${job.id}`,
    `type:      ${job.type}`,
    `status:    ${job.status}`,
    `attempts:  ${job.attempts}/${job.maxAttempts}`,
    `run at:    ${iso(job.runAt)}`,
    `created:   ${iso(job.createdAt)}`,
    `updated:   ${iso(job.updatedAt)}`,
    `payload:   ${short(job.payload)}`,
  ];
  if (job.result !== null) lines.push(`result:    ${short(job.result)}`);
  if (job.error !== null) {
    // `retryAt` is stored as epoch ms; an operator reads a time.
    const { retryAt, ...error } = job.error;
    lines.push(`error:     ${short(retryAt === undefined ? error : { ...error, retryAt: iso(retryAt) })}`);
  }
  if (job.idempotencyKey !== null && job.idempotencyKey !== undefined) {
    lines.push(`key:       ${job.idempotencyKey}`);
  }
  lines.push(`events:`, ...(events.length > 0 ? events : ['  (none)']));
  return lines.join('\n');
}

import type { FastifyInstance } from 'fastify';
import { BreakwaterError } from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import { JOB_STATUSES, type JobRecord, type JobStatus } from '../store/index.js';
import type { ServerStore } from './options.js';
import { lastProgress, toJobView, type JobView } from './views.js';

/** What the job routes need. */
export interface JobRoutesOptions {
  jobs: Jobs;
  store: ServerStore;
  publicUrl: string | undefined;
}

/** Route schema of `:id`: ids are short (`job_` + a UUID); anything else cannot exist. */
export const JOB_ID_PARAMS = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 255 } },
} as const;

/** Default and largest page of `GET /jobs`. */
export const LIST_LIMITS = { default: 50, max: 1000 } as const;

interface ListQuery {
  status?: JobStatus[];
  type?: string;
  limit: number;
  before_id?: string;
}

/**
 * `GET /jobs/:id` (poll one job), `POST /jobs/:id/cancel` and `GET /jobs` (list). Answers are
 * {@link JobView}s with `Cache-Control: no-store`, so no proxy serves a stale status to a poller.
 */
export function jobRoutes(app: FastifyInstance, options: JobRoutesOptions): void {
  const { jobs, store, publicUrl } = options;

  const fullView = async (job: JobRecord): Promise<JobView> =>
    toJobView(job, publicUrl, await lastProgress(store, job.id));

  app.get<{ Params: { id: string } }>(
    '/jobs/:id',
    { schema: { params: JOB_ID_PARAMS } },
    async (request, reply) => {
      const job = await jobs.get(request.params.id);
      if (job === undefined) throw notFound(request.params.id);
      void reply.header('cache-control', 'no-store');
      return fullView(job);
    },
  );

  // 202 whatever the job's state: a running job stops later (its handler's signal aborts within one
  // heartbeat), so the answer is "accepted"; its `status` says where the job is now.
  app.post<{ Params: { id: string } }>(
    '/jobs/:id/cancel',
    { schema: { params: JOB_ID_PARAMS } },
    async (request, reply) => {
      const job = await jobs.cancel(request.params.id);
      void reply.code(202).header('cache-control', 'no-store');
      return fullView(job);
    },
  );

  app.get<{ Querystring: ListQuery }>(
    '/jobs',
    {
      schema: {
        querystring: {
          type: 'object',
          properties: {
            // Repeat it for several: ?status=pending&status=failed (a single value becomes a list).
            status: { type: 'array', items: { enum: JOB_STATUSES }, maxItems: JOB_STATUSES.length },
            type: { type: 'string', minLength: 1, maxLength: 255 },
            limit: { type: 'integer', minimum: 1, maximum: LIST_LIMITS.max, default: LIST_LIMITS.default },
            before_id: { type: 'string', minLength: 1, maxLength: 255 },
          },
        },
      },
    },
    async (request, reply) => {
      const { status, type, limit, before_id: beforeId } = request.query;
      const found = await jobs.list({
        ...(status === undefined ? {} : { status }),
        ...(type === undefined ? {} : { type }),
        ...(beforeId === undefined ? {} : { beforeId }),
        limit,
      });
      void reply.header('cache-control', 'no-store');
      return {
        jobs: found.map((job) => toJobView(job, publicUrl)),
        // Newest first by id: the next page is everything older than the last one shown.
        next_before_id: found.length === limit ? (found.at(-1)?.id ?? null) : null,
      };
    },
  );
}

/** `not_found` for job `id`. */
export function notFound(id: string): BreakwaterError {
  return new BreakwaterError('not_found', { message: `There is no job ${id}.` });
}

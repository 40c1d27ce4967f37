import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BreakwaterError, type Clock } from '../core/index.js';
import { callerPrincipal, listOwner, jobVisibleTo, type Jobs } from '../jobs/index.js';
import { JOB_STATUSES, MAX_OWNER_LENGTH, type JobRecord, type JobStatus } from '../store/index.js';
import type { ServerStore } from './options.js';
import { lastProgress, toInputRequestView, toJobView, type JobView } from './views.js';

/** What the job routes need. */
export interface JobRoutesOptions {
  jobs: Jobs;
  store: ServerStore;
  publicUrl: string | undefined;
  /** The server's clock: a job's error tells what is left of its wait as of this clock's now. */
  clock: Clock;
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
  owner?: string;
  limit: number;
  before_id?: string;
}

/**
 * `GET /jobs/:id` (poll one job), `POST /jobs/:id/cancel`, `POST /jobs/:id/input` (answer its question) and
 * `GET /jobs` (list). Answers are
 * {@link JobView}s with `Cache-Control: no-store`, so no proxy serves a stale status to a poller.
 *
 * Ownership (docs/architecture.md#identity-and-ownership): a job is answered only to its owner and to
 * principals with the `admin` scope; anyone else gets the 404 `not_found` of an id that does not exist (same
 * status, body and headers), and a cancel of it changes nothing. `GET /jobs` lists the caller's own jobs;
 * only `admin` lists every owner's (and may pass `?owner=` for one); a non-admin's `?owner=` naming someone
 * else lists nothing.
 */
export function jobRoutes(app: FastifyInstance, options: JobRoutesOptions): void {
  const { jobs, store, publicUrl, clock } = options;

  const fullView = async (job: JobRecord): Promise<JobView> => {
    const extra = await lastProgress(store, job.id);
    const view = toJobView(job, clock.now(), publicUrl, extra);
    if (job.status === 'input_required') {
      const request = await jobs.inputRequest(job.id);
      if (request) view.input_request = toInputRequestView(request);
    }
    return view;
  };

  app.get<{ Params: { id: string } }>(
    '/jobs/:id',
    { schema: { params: JOB_ID_PARAMS } },
    async (request, reply) => {
      const job = await accessibleJob(jobs, request, request.params.id);
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
      await accessibleJob(jobs, request, request.params.id);
      const job = await jobs.cancel(request.params.id);
      void reply.code(202).header('cache-control', 'no-store');
      return fullView(job);
    },
  );

  // The answer to the question an input_required job waits on (docs/jobs.md, "Asking for input"), body
  // `{ key, answer: { action: 'accept' | 'decline' | 'cancel', content? } }`: its owner
  // or admin only (a stranger gets the not_found of a missing job, nothing stored). 200 with the job, now
  // pending; refusals are jobs.respond's errors (input_not_awaited 409, invalid_payload 400,
  // payload_too_large 413, input_timeout 408) and store nothing.
  app.post<{ Params: { id: string }; Body: { key: string; answer: unknown } }>(
    '/jobs/:id/input',
    {
      schema: {
        params: JOB_ID_PARAMS,
        body: {
          type: 'object',
          required: ['key', 'answer'],
          properties: {
            key: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$' },
            // The answer as an MCP ElicitResult; jobs.respond checks its shape and content (problems listed).
            answer: { type: 'object' },
          },
          additionalProperties: false,
        },
      },
    },
    async (request, reply) => {
      await accessibleJob(jobs, request, request.params.id);
      const { key, answer } = request.body;
      const job = await jobs.respond(request.params.id, key, answer, {
        principal: callerPrincipal(request.principal),
      });
      void reply.header('cache-control', 'no-store');
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
            // A principal id (admin: any owner's jobs; anyone else: only its own).
            owner: { type: 'string', minLength: 1, maxLength: MAX_OWNER_LENGTH },
            limit: { type: 'integer', minimum: 1, maximum: LIST_LIMITS.max, default: LIST_LIMITS.default },
            before_id: { type: 'string', minLength: 1, maxLength: 255 },
          },
        },
      },
    },
    async (request, reply) => {
      const { status, type, limit, before_id: beforeId } = request.query;
      const owner = listOwner(callerPrincipal(request.principal), request.query.owner);
      const found =
        owner === null
          ? []
          : await jobs.list({
              ...(status === undefined ? {} : { status }),
              ...(type === undefined ? {} : { type }),
              ...(owner === undefined ? {} : { owner }),
              ...(beforeId === undefined ? {} : { beforeId }),
              limit,
            });
      void reply.header('cache-control', 'no-store');
      return {
        jobs: found.map((job) => toJobView(job, clock.now(), publicUrl)),
        // Newest first by id: the next page is everything older than the last one shown.
        next_before_id: found.length === limit ? (found.at(-1)?.id ?? null) : null,
      };
    },
  );
}

/**
 * The job `id` when the caller of `request` may see it (its owner, or `admin`).
 * @throws BreakwaterError `not_found` when it does not exist or the caller may not see it: the same error.
 */
export async function accessibleJob(jobs: Jobs, request: FastifyRequest, id: string): Promise<JobRecord> {
  const job = jobVisibleTo(callerPrincipal(request.principal), await jobs.get(id));
  if (job === undefined) throw notFound(id);
  return job;
}

/** `not_found` for job `id`. */
export function notFound(id: string): BreakwaterError {
  return new BreakwaterError('not_found', { message: `There is no job ${id}.` });
}

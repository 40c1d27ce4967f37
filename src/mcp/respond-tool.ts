import { z } from 'zod';
import { BreakwaterError } from '../core/index.js';
import { callerPrincipal } from '../jobs/index.js';
import { visibleJob, type JobToolDeps } from './job-tools.js';
import { resilientTool, type SyncTool } from './tool.js';

/**
 * The `respond_to_job` tool: answers the question a background job waits on (docs/jobs.md, "Asking for
 * input"; the job's status is `input_required` and `get_job_status` shows the question as `input_request`).
 * Works on every protocol revision, so a client without tasks or elicitation can still answer. Only the
 * job's owner (or `admin`) may: a job the caller may not see is `not_found` and left alone, as in
 * `get_job_status`. Refusals are the jobs runtime's (`Jobs.respond`): `input_not_awaited`, `invalid_payload`
 * (the answer does not fit the question's schema, `details.problems`), `payload_too_large`,
 * `input_timeout`; nothing is stored then and the job keeps waiting.
 */
export function respondToJobTool(deps: JobToolDeps, name = 'respond_to_job'): SyncTool {
  return resilientTool({
    name,
    description:
      "Answers the question a background job asked (its status is input_required; get_job_status shows the question as input_request). Ask the user, then pass the answer as an elicitation result: { action: 'accept', content: { <the question schema's fields> } }, or { action: 'decline' } / { action: 'cancel' }.",
    inputSchema: {
      job_id: z.string().min(1).max(200).describe('The job_id of the job that asked.'),
      key: z
        .string()
        .regex(/^[A-Za-z0-9_.:-]{1,64}$/)
        .optional()
        .describe("The question's key (input_request.key); default: the question the job waits on now."),
      answer: z
        .object({
          action: z.enum(['accept', 'decline', 'cancel']),
          content: z.record(z.string(), z.unknown()).optional(),
        })
        .strict()
        .describe(
          "The user's answer (MCP ElicitResult): accept with content fitting input_request.schema, or decline / cancel.",
        ),
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handler({ job_id, key, answer }) {
      const job = await visibleJob(deps, job_id);
      if (job === undefined)
        throw new BreakwaterError('not_found', { message: `There is no job ${job_id}.` });
      const asked = key ?? (await deps.jobs.inputRequest(job_id))?.key;
      if (asked === undefined) {
        throw new BreakwaterError('input_not_awaited', {
          message: `Job ${job_id} is not waiting for input (it is ${job.status}).`,
          details: { status: job.status },
        });
      }
      const answered = await deps.jobs.respond(job_id, asked, answer, { principal: callerPrincipal() });
      return {
        job_id: answered.id,
        status: answered.status,
        key: asked,
        status_url: deps.urls.status(answered.id),
        message: `The answer was recorded and job ${answered.id} goes on. Call get_job_status with its job_id to see progress and the result.`,
      };
    },
  });
}

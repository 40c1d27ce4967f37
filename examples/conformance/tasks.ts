/**
 * The suite's fixtures of the tasks extension (`io.modelcontextprotocol/tasks`, its `tasks-*` scenarios):
 * `greet` (a plain tool), and the job tools `slow_compute`, `failing_job`, `protocol_error_job` and
 * `confirm_delete` (asks the user to confirm, so its task waits in `input_required`) and `multi_input` (asks two
 * approvers at once: its task waits on both questions), whose calls become tasks
 * when the request declares the extension. Names, arguments and results as
 * `@modelcontextprotocol/conformance` expects them; written with the public API only, like any app's tools.
 */
import { z } from 'zod';
import { BreakwaterError } from '../../src/entries/index.js';
import type { Jobs } from '../../src/entries/jobs.js';
import { jobTool, resilientTool, type McpTool } from '../../src/entries/mcp.js';
import { wait } from './wait.js';

/** The message of the tool error `failing_job` ends with. */
export const FAILING_JOB_TEXT = 'This job intentionally fails with a tool error (conformance fixture).';
/** Ms `failing_job` works before it fails (the suite says about a second). */
export const FAILING_JOB_MS = 1_000;

interface ComputePayload {
  seconds: number;
  label: string;
}

/** The question `confirm_delete` asks: a yes/no as a form with one boolean field, `confirm`. */
export function confirmDeleteQuestion(filename: string) {
  return {
    key: 'confirm',
    message: `Delete ${filename}?`,
    schema: {
      type: 'object' as const,
      properties: { confirm: { type: 'boolean', description: 'Delete the file' } },
      required: ['confirm'],
    },
  };
}

/**
 * The two questions `multi_input` asks at once (`ctx.requestInputs`): each approver signs with a name and a
 * yes/no, the form the suite answers each with.
 */
export function approvalQuestions() {
  const approval = (who: string) => ({
    message: `${who}: sign with your name and approve or not.`,
    schema: {
      type: 'object' as const,
      properties: {
        name: { type: 'string', description: 'Who signs' },
        confirm: { type: 'boolean', description: 'Approve' },
      },
      required: ['name', 'confirm'],
    },
  });
  return { first_approval: approval('First approver'), second_approval: approval('Second approver') };
}

/** Defines the job types behind {@link taskTools} (each run once: a failure is the fixture's answer). */
export function defineTaskJobs(jobs: Jobs): void {
  jobs.defineJob<{ name: string }>(
    'conformance.greet_task',
    ({ payload }) => ({ greeting: `Hello, ${payload.name}!` }),
    {
      maxAttempts: 1,
    },
  );
  jobs.defineJob<ComputePayload>(
    'conformance.slow_compute',
    async ({ payload, signal }) => {
      await wait(payload.seconds * 1000, signal);
      return { label: payload.label, seconds: payload.seconds };
    },
    { maxAttempts: 1, timeoutMs: 120_000 },
  );
  jobs.defineJob(
    'conformance.failing_job',
    async ({ signal }) => {
      await wait(FAILING_JOB_MS, signal);
      throw new BreakwaterError('invalid_payload', { message: FAILING_JOB_TEXT });
    },
    { maxAttempts: 1 },
  );
  jobs.defineJob<{ filename: string }>(
    'conformance.confirm_delete',
    async (ctx) => {
      const answer = await ctx.requestInput(confirmDeleteQuestion(ctx.payload.filename));
      const confirmed = answer.action === 'accept' && answer.content?.['confirm'] === true;
      return { filename: ctx.payload.filename, deleted: confirmed };
    },
    { maxAttempts: 1 },
  );
  jobs.defineJob(
    'conformance.multi_input',
    async (ctx) => {
      const answers = await ctx.requestInputs(approvalQuestions());
      const signers = Object.values(answers)
        .filter((answer) => answer.action === 'accept' && answer.content?.['confirm'] === true)
        .map((answer) => String(answer.content?.['name']));
      return { approvedBy: signers };
    },
    { maxAttempts: 1 },
  );
  jobs.defineJob(
    'conformance.protocol_error_job',
    () => {
      // A programming error: the job fails as `internal_error`, which the extension reports as `failed`.
      throw new TypeError('conformance fixture: an internal failure');
    },
    { maxAttempts: 1 },
  );
}

/** The tasks fixtures, in the order `tools/list` shows them. */
export function taskTools(): McpTool[] {
  return [
    resilientTool({
      name: 'greet',
      description: 'Greets by name, at once (conformance fixture).',
      inputSchema: { name: z.string() },
      annotations: { readOnlyHint: true },
      handler: ({ name }) => ({ greeting: `Hello, ${name}!` }),
      toText: (result) => result.greeting,
    }),
    jobTool({
      name: 'slow_compute',
      description: 'Works for the given seconds, then answers (conformance fixture).',
      inputSchema: { seconds: z.number().min(0).max(600), label: z.string().optional() },
      jobType: 'conformance.slow_compute',
      toPayload: ({ seconds, label }) => ({ seconds, label: label ?? '' }),
      toText: (result) => {
        const { label, seconds } = result as ComputePayload;
        return `Computed ${label === '' ? 'a result' : label} in ${seconds} s.`;
      },
    }),
    jobTool({
      name: 'failing_job',
      description: 'Fails with a tool error after about a second; runs only as a task (conformance fixture).',
      inputSchema: {},
      jobType: 'conformance.failing_job',
      taskSupport: 'required',
    }),
    jobTool({
      name: 'confirm_delete',
      description: 'Deletes a file (pretend) once the user confirms; asks them first (conformance fixture).',
      inputSchema: { filename: z.string().min(1).max(1_000) },
      jobType: 'conformance.confirm_delete',
      toText: (result) => {
        const { filename, deleted } = result as { filename: string; deleted: boolean };
        return deleted ? `Deleted ${filename}.` : `Kept ${filename}.`;
      },
    }),
    jobTool({
      name: 'multi_input',
      description: 'Asks two approvers at once, then reports who approved (conformance fixture).',
      inputSchema: {},
      jobType: 'conformance.multi_input',
      toText: (result) => {
        const { approvedBy } = result as { approvedBy: string[] };
        return approvedBy.length === 0 ? 'Nobody approved.' : `Approved by ${approvedBy.join(' and ')}.`;
      },
    }),
    jobTool({
      name: 'protocol_error_job',
      description: 'Fails with an internal error (conformance fixture).',
      inputSchema: {},
      jobType: 'conformance.protocol_error_job',
    }),
    jobTool({
      name: 'test_tool_with_task',
      description:
        'Asks for a name (input_required), then runs as a task that greets it; runs only as a task (conformance fixture).',
      inputSchema: {},
      jobType: 'conformance.greet_task',
      taskSupport: 'required',
      toPayload: async (_args, ctx) => {
        const answer = await ctx.requestInput({
          key: 'user_name',
          message: 'What is your name?',
          schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        });
        return { name: String(answer.content?.['name'] ?? 'stranger') };
      },
      toText: (result) => (result as { greeting: string }).greeting,
    }),
  ];
}

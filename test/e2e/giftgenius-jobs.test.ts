/**
 * GiftGenius end to end, the deep analysis job: called as an MCP task with progress notifications and a
 * partial result, canceled mid-run, and followed over the gateway's resumable SSE stream.
 */
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { loadCatalog, recommendGifts } from '../../examples/giftgenius/services/index.js';
import type { Gateway } from '../../src/gateway/index.js';
import {
  connect,
  gate,
  getJson,
  openEvents,
  startBackends,
  startGiftGenius,
  tempDb,
  until,
  useCleanups,
  type Frame,
} from './support.js';

const defer = useCleanups();

const REQUEST = { interests: ['music', 'cooking'], budget_usd: 80, recipient: 'Alex' };
/** What the deep analysis returns for REQUEST: the catalog's five best, best first. */
const GIFTS = recommendGifts(loadCatalog(), REQUEST);

/** The event types of a deep analysis that runs to the end, in order. */
const FULL_RUN = [
  'job.started',
  'job.progress',
  'job.progress',
  'job.progress',
  'job.partial',
  'job.progress',
  'job.progress',
  'job.completed',
];

async function setup(stepMs: number) {
  const backends = await startBackends(defer);
  const gw = await startGiftGenius(defer, backends, {
    dbPath: tempDb(defer),
    settings: { stepMs },
    gateway: { graceMs: 200 },
  });
  return { gw, mcp: await connect(defer, gw.mcpUrl) };
}

const seqs = (frames: Frame[]) => frames.map((f) => Number(f.id));
const types = (frames: Frame[]) => frames.map((f) => f.event);

/** Waits until the job is finished, read as a widget would: `GET /jobs/:id`. */
async function untilFinished(gw: Gateway, jobId: string): Promise<void> {
  await until(async () => (await getJson(`${gw.url}/jobs/${jobId}`)).body.finished_at !== null, 'the job');
}

describe('the deep analysis job', () => {
  it('runs as an MCP task: increasing progress to 4/4, three drafts as a partial result, the gifts as result', async () => {
    expect(GIFTS.map((g) => g.id)).toEqual(['p051', 'p027', 'p148', 'p144', 'p022']);
    const { mcp } = await setup(50);
    await mcp.standaloneStream;
    const progress: Progress[] = [];
    const last = gate();
    const created = await mcp.client.request(
      { method: 'tools/call', params: { name: 'start_deep_analysis', arguments: REQUEST } },
      CreateTaskResultSchema,
      {
        task: {},
        onprogress: (p) => {
          progress.push(p);
          if (p.progress === p.total) last.open();
        },
      },
    );
    const taskId = created.task.taskId;
    expect(created.task.status).toBe('working');

    const result = await mcp.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toEqual({
      gifts: GIFTS,
      summary: `5 gifts for Alex, best first: ${GIFTS.map((g) => g.name).join('; ')}.`,
    });
    expect((await mcp.client.experimental.tasks.getTask(taskId)).status).toBe('completed');

    await last.promise;
    const values = progress.map((p) => p.progress);
    expect(values.every((value, i) => i === 0 || value > values[i - 1]!)).toBe(true);
    expect(progress.map((p) => [p.progress, p.total, p.message])).toEqual([
      [0, 4, 'Finding candidates'],
      [1, 4, 'Scoring candidates against the interests'],
      [2, 4, 'Drafting gift ideas'],
      [3, 4, 'Checking the final picks'],
      [4, 4, 'Done'],
    ]);

    const status = (await mcp.call('get_job_status', { job_id: taskId })).structuredContent;
    expect(status).toMatchObject({
      job_id: taskId,
      status: 'completed',
      attempts: 1,
      progress: { step: 4, total: 4, message: 'Done' },
      partial_count: 1,
      result: result.structuredContent,
    });
    expect(status.partial_results).toEqual([{ drafts: GIFTS.slice(0, 3) }]);
  });

  it('cancel_job mid-run: the job ends canceled and nothing is written after job.canceled', async () => {
    // Steps of 1 s: step 1 is reported after one, and the cancel lands in the second one's wait (a call
    // of a few ms), so the event sequence is exact.
    const { gw, mcp } = await setup(1_000);
    const handle = (await mcp.call('start_deep_analysis', REQUEST)).structuredContent;
    const jobId: string = handle.job_id;
    expect(handle.events_url).toBe(`${gw.url}/jobs/${jobId}/events`);

    const stream = await openEvents(defer, handle.events_url);
    expect(stream.status).toBe(200);
    const seen: Frame[] = [];
    while (!seen.some((f) => f.event === 'job.progress' && JSON.parse(f.data!).payload.step >= 1)) {
      const frame = await stream.nextEvent();
      if (frame === undefined) throw new Error('the stream ended before step 1');
      seen.push(frame);
    }

    const cancel = (await mcp.call('cancel_job', { job_id: jobId })).structuredContent;
    expect(cancel).toMatchObject({ job_id: jobId, status: 'in_progress', cancel_requested: true });
    // The stream ends by itself after the terminal event.
    const all = [...seen, ...(await stream.rest())];
    expect(types(all)).toEqual(['job.started', 'job.progress', 'job.progress', 'job.canceled']);
    expect(seqs(all)).toEqual([1, 2, 3, 4]);

    const status = (await mcp.call('get_job_status', { job_id: jobId })).structuredContent;
    expect(status).toMatchObject({
      status: 'canceled',
      cancel_requested: true,
      progress: { step: 1, total: 4, message: 'Scoring candidates against the interests' },
      partial_count: 0,
      error: { code: 'canceled', category: 'canceled', outcome: 'failed', retryable: false },
    });
    expect(status).not.toHaveProperty('result');
    // Nothing after the terminal event: a resume from it is told "done" (204), and the store agrees.
    expect((await openEvents(defer, handle.events_url, { 'last-event-id': '4' })).status).toBe(204);
    expect((await gw.store.events(jobId)).map((e) => e.type)).toEqual(types(all));
  });

  it('resumes the SSE stream of a finished job from Last-Event-ID without gaps or duplicates', async () => {
    const { gw, mcp } = await setup(20);
    const jobId: string = (await mcp.call('start_deep_analysis', REQUEST)).structuredContent.job_id;
    await untilFinished(gw, jobId);
    const url = `${gw.url}/jobs/${jobId}/events`;

    const first = await openEvents(defer, url);
    const head = [(await first.nextEvent())!, (await first.nextEvent())!, (await first.nextEvent())!];
    first.close();
    const second = await openEvents(defer, url, { 'last-event-id': head[2]!.id! });
    expect(second.status).toBe(200);
    const tail = await second.rest();

    const all = [...head, ...tail];
    expect(seqs(all)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(types(all)).toEqual(FULL_RUN);
    expect(JSON.parse(all.at(-1)!.data!).payload.result.gifts).toEqual(GIFTS);
    // A widget polling the job gets the same absolute URLs as the model got from the tool.
    expect((await getJson(`${gw.url}/jobs/${jobId}`)).body).toMatchObject({
      status: 'completed',
      last_event_seq: 8,
      status_url: `${gw.url}/jobs/${jobId}`,
      events_url: url,
    });
  });

  it('resumes the SSE stream of a running job: the replay and the live events join without a seam', async () => {
    const { gw, mcp } = await setup(100);
    const jobId: string = (await mcp.call('start_deep_analysis', REQUEST)).structuredContent.job_id;
    const url = `${gw.url}/jobs/${jobId}/events`;

    const first = await openEvents(defer, url);
    const head = [(await first.nextEvent())!, (await first.nextEvent())!, (await first.nextEvent())!];
    first.close();
    // Reconnected while the job most likely still runs (three more steps of 100 ms); either way the two
    // streams join into the full run.
    const second = await openEvents(defer, url, { 'last-event-id': head[2]!.id! });
    const tail = await second.rest();
    expect(seqs([...head, ...tail])).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(types([...head, ...tail])).toEqual(FULL_RUN);
  });
});

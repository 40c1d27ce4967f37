import { describe, expect, it } from 'vitest';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';
import { NO_INPUT, type InputRequest } from './job-input.js';
import type { JobEvent, JobRecord, LeaseRef, NewJob, StoreNotification } from './jobs.js';

/**
 * The input contract (docs/jobs.md, "Asking for input"): `askInput` parks a run's job in `input_required`
 * with its question, `answerInput` stores the answer and puts it back to `pending`, `expireInputs` ends
 * unanswered ones with `input_timeout`, and `cancel` ends a waiting job at once, on every backend.
 */
export function inputContract(name: string, backend: FacetBackend): void {
  describe(`input contract: ${name}`, () => {
    const h = useFacetHarness(backend);

    function newJob(overrides: Partial<NewJob> = {}): NewJob {
      return {
        type: 'checkout',
        payload: { n: 1 },
        runAt: h.clock.now(),
        priority: 0,
        maxAttempts: 3,
        ...overrides,
      };
    }

    async function running(overrides: Partial<NewJob> = {}): Promise<{ job: JobRecord; lease: LeaseRef }> {
      const { job } = await h.store.enqueue(newJob(overrides));
      const [claim] = await h.store.claim({ owner: 'w1', types: [job.type], limit: 1, leaseMs: 30_000 });
      return { job: claim!.job, lease: { id: job.id, token: claim!.token } };
    }

    function question(overrides: Partial<InputRequest> = {}): InputRequest {
      return {
        key: '0',
        message: 'Place it again?',
        schema: null,
        askedAt: h.clock.now(),
        expiresAt: null,
        ...overrides,
      };
    }

    const types = async (id: string) => (await h.store.events(id)).map((event) => event.type);

    it('askInput parks the job: input_required, lease cleared, the run not counted, job.input_required', async () => {
      const { job, lease } = await running();
      const request = question({ expiresAt: h.clock.now() + 60_000 });
      h.clock.tick(5);
      const event = await h.store.askInput(lease, request);
      expect(event).toMatchObject({ type: 'job.input_required', seq: 2, payload: { request } });
      expect(await h.store.get(job.id)).toMatchObject({
        status: 'input_required',
        attempts: 0,
        leaseOwner: null,
        leaseExpiresAt: null,
        finishedAt: null,
        updatedAt: h.clock.now(),
      });
      expect(await h.store.jobInput(job.id)).toEqual({
        request,
        requests: [request],
        answers: {},
        rounds: 1,
      });
      expect((await h.store.stats()).counts.input_required).toBe(1);
      // No worker reclaims it, however long it waits, and nextRunAt does not count it.
      h.clock.tick(3_600_000);
      expect(await h.store.claim({ owner: 'w2', types: [], limit: 10, leaseMs: 30_000 })).toEqual([]);
      expect(await h.store.nextRunAt([])).toBeNull();
      expect((await h.store.list({ status: 'input_required' })).map((j) => j.id)).toEqual([job.id]);
    });

    it('askInput is fenced: a stale token or a job not in_progress changes nothing', async () => {
      const { job, lease } = await running();
      expect(await h.store.askInput({ id: job.id, token: lease.token + 1 }, question())).toBeUndefined();
      await h.store.complete(lease, 'done');
      expect(await h.store.askInput(lease, question())).toBeUndefined();
      expect((await h.store.get(job.id))!.status).toBe('completed');
      expect(await h.store.jobInput(job.id)).toEqual(NO_INPUT);
      expect(await h.store.jobInput('job_missing')).toBeUndefined();
    });

    it('askInput of a job whose cancel was requested ends it canceled instead', async () => {
      const { job, lease } = await running();
      await h.store.cancel(job.id);
      const event = await h.store.askInput(lease, question());
      expect(event).toMatchObject({ type: 'job.canceled', payload: { attempts: 1 } });
      expect((await h.store.get(job.id))!.status).toBe('canceled');
    });

    it('answerInput stores the answer and requeues the job; the next ask keeps the answers', async () => {
      const received: StoreNotification[] = [];
      const { job, lease } = await running();
      const request = question();
      await h.store.askInput(lease, request);
      const subscription = h.store.subscribe((n) => received.push(n));
      h.clock.tick(10);
      const answered = await h.store.answerInput(job.id, '0', { placeAgain: true });
      expect(answered).toMatchObject({
        outcome: 'answered',
        job: { id: job.id, status: 'pending', runAt: h.clock.now(), attempts: 0 },
        event: { type: 'job.input_received', seq: 3, payload: { key: '0' } },
      });
      expect(await h.store.jobInput(job.id)).toEqual({
        request: null,
        requests: [],
        answers: { '0': { placeAgain: true } },
        rounds: 1,
      });
      await expect
        .poll(() => received.some((n) => n.kind === 'job_available' && n.type === 'checkout'))
        .toBe(true);
      subscription.dispose();
      // The rerun asks a second question: the first answer stays.
      const [claim] = await h.store.claim({ owner: 'w2', types: [], limit: 1, leaseMs: 30_000 });
      expect(claim!.job.attempts).toBe(1);
      const second = question({ key: 'confirm', message: 'Sure?' });
      await h.store.askInput({ id: job.id, token: claim!.token }, second);
      expect(await h.store.jobInput(job.id)).toEqual({
        request: second,
        requests: [second],
        answers: { '0': { placeAgain: true } },
        rounds: 2,
      });
      expect(await types(job.id)).toEqual([
        'job.started',
        'job.input_required',
        'job.input_received',
        'job.started',
        'job.input_required',
      ]);
    });

    it('answerInput refuses, changing nothing: not waiting, another key, expired, missing', async () => {
      const { job, lease } = await running();
      expect(await h.store.answerInput(job.id, '0', 'yes')).toMatchObject({
        outcome: 'not_waiting',
        job: { status: 'in_progress' },
      });
      const request = question({ key: 'size', expiresAt: h.clock.now() + 1_000 });
      await h.store.askInput(lease, request);
      const before = await h.store.get(job.id);
      expect(await h.store.answerInput(job.id, '0', 'yes')).toEqual({
        outcome: 'wrong_key',
        job: before,
        request,
      });
      h.clock.tick(1_000);
      expect(await h.store.answerInput(job.id, 'size', 'L')).toEqual({
        outcome: 'expired',
        job: before,
        request,
      });
      expect(await h.store.get(job.id)).toEqual(before);
      expect(await h.store.jobInput(job.id)).toEqual({
        request,
        requests: [request],
        answers: {},
        rounds: 1,
      });
      expect(await h.store.answerInput('job_missing', '0', 'yes')).toBeUndefined();
    });

    it('cancel ends a waiting job at once; an answer after it is refused', async () => {
      const { job, lease } = await running();
      await h.store.askInput(lease, question());
      h.clock.tick(7);
      expect(await h.store.cancel(job.id)).toMatchObject({
        status: 'canceled',
        finishedAt: h.clock.now(),
        cancelRequestedAt: null,
      });
      expect((await h.store.events(job.id)).at(-1)).toMatchObject({
        type: 'job.canceled',
        payload: { attempts: 0 },
      });
      expect(await h.store.answerInput(job.id, '0', 'yes')).toMatchObject({ outcome: 'not_waiting' });
      expect((await h.store.stats()).counts).toMatchObject({ input_required: 0, canceled: 1 });
    });

    it('expireInputs ends due questions of the given types with input_timeout and tells the next expiry', async () => {
      const a = await running({ type: 'checkout' });
      const b = await running({ type: 'checkout' });
      const c = await running({ type: 'survey' });
      const d = await running({ type: 'checkout' });
      const t0 = h.clock.now();
      await h.store.askInput(a.lease, question({ expiresAt: t0 + 1_000 }));
      await h.store.askInput(b.lease, question({ expiresAt: t0 + 5_000 }));
      await h.store.askInput(c.lease, question({ expiresAt: t0 + 500 }));
      await h.store.askInput(d.lease, question());
      expect(await h.store.expireInputs(['checkout'])).toEqual({ ended: [], nextExpiresAt: t0 + 1_000 });
      h.clock.tick(1_000);
      const expiry = await h.store.expireInputs(['checkout']);
      const error = {
        code: 'input_timeout',
        message: "Nobody answered the job's question within 1000 ms, so the job stopped.",
        kind: 'permanent',
        userFacing: true,
      };
      expect(expiry.nextExpiresAt).toBe(t0 + 5_000);
      expect(expiry.ended).toEqual<JobEvent[]>([
        {
          eventId: `${a.job.id}:3`,
          seq: 3,
          type: 'job.failed',
          jobId: a.job.id,
          timestamp: t0 + 1_000,
          payload: { error, attempts: 0 },
        },
      ]);
      expect(await h.store.get(a.job.id)).toMatchObject({ status: 'failed', error, finishedAt: t0 + 1_000 });
      // Another type's due question is left to its own workers; all types: it ends too.
      expect((await h.store.get(c.job.id))!.status).toBe('input_required');
      expect((await h.store.expireInputs([])).ended.map((e) => e.jobId)).toEqual([c.job.id]);
      expect((await h.store.get(b.job.id))!.status).toBe('input_required');
      expect((await h.store.get(d.job.id))!.status).toBe('input_required');
      // A dead letter retried runs again; its answers are kept.
      expect((await h.store.retryFailed(a.job.id))!.job.status).toBe('pending');
    });

    it('askInput of several opens them all; each answer closes one; the last requeues the job', async () => {
      const { job, lease } = await running();
      const t0 = h.clock.now();
      const size = question({ key: 'size', message: 'Which size?', expiresAt: t0 + 9_000 });
      const color = question({ key: 'color', message: 'Which color?', expiresAt: t0 + 4_000 });
      const note = question({ key: 'note', message: 'A note?' });
      const event = await h.store.askInput(lease, [size, color, note]);
      expect(event).toMatchObject({
        type: 'job.input_required',
        payload: { request: size, requests: [size, color, note] },
      });
      expect(await h.store.jobInput(job.id)).toEqual({
        request: size,
        requests: [size, color, note],
        answers: {},
        rounds: 1,
      });
      // The earliest expiry is the job's deadline.
      expect((await h.store.expireInputs([])).nextExpiresAt).toBe(t0 + 4_000);
      expect(await h.store.answerInput(job.id, 'other', 'x')).toMatchObject({
        outcome: 'wrong_key',
        request: size,
      });
      h.clock.tick(10);
      expect(
        await h.store.answerInput(job.id, 'color', { action: 'accept', content: { c: 'red' } }),
      ).toMatchObject({
        outcome: 'answered',
        job: { status: 'input_required', updatedAt: t0 + 10 },
        event: { type: 'job.input_received', payload: { key: 'color' } },
      });
      expect(await h.store.jobInput(job.id)).toEqual({
        request: size,
        requests: [size, note],
        answers: { color: { action: 'accept', content: { c: 'red' } } },
        rounds: 1,
      });
      expect((await h.store.expireInputs([])).nextExpiresAt).toBe(t0 + 9_000);
      // An answered key is no longer open.
      expect(await h.store.answerInput(job.id, 'color', 'again')).toMatchObject({ outcome: 'wrong_key' });
      expect(await h.store.claim({ owner: 'w2', types: [], limit: 1, leaseMs: 30_000 })).toEqual([]);
      expect(await h.store.answerInput(job.id, 'size', 'L')).toMatchObject({
        job: { status: 'input_required' },
      });
      expect(await h.store.answerInput(job.id, 'note', 'none')).toMatchObject({
        outcome: 'answered',
        job: { status: 'pending', runAt: t0 + 10 },
      });
      expect(await h.store.jobInput(job.id)).toMatchObject({ request: null, requests: [], rounds: 1 });
      expect((await h.store.expireInputs([])).nextExpiresAt).toBeNull();
      expect(await types(job.id)).toEqual([
        'job.started',
        'job.input_required',
        'job.input_received',
        'job.input_received',
        'job.input_received',
      ]);
    });

    it('several open questions expire at the earliest expiry, whatever was answered', async () => {
      const { job, lease } = await running();
      const t0 = h.clock.now();
      const late = question({ key: 'late', expiresAt: t0 + 5_000 });
      const soon = question({ key: 'soon', expiresAt: t0 + 2_000 });
      await h.store.askInput(lease, [late, soon]);
      await h.store.answerInput(job.id, 'late', 'ok');
      h.clock.tick(2_000);
      expect(await h.store.answerInput(job.id, 'soon', 'ok')).toMatchObject({
        outcome: 'expired',
        request: soon,
      });
      const expiry = await h.store.expireInputs([]);
      expect(expiry.ended.map((e) => e.jobId)).toEqual([job.id]);
      expect(await h.store.get(job.id)).toMatchObject({
        status: 'failed',
        error: {
          code: 'input_timeout',
          message: "Nobody answered the job's question within 2000 ms, so the job stopped.",
        },
      });
    });

    it('another store on the same storage answers what this one parked (a restart, another process)', async () => {
      const { job, lease } = await running();
      await h.store.askInput(
        lease,
        question({ schema: { type: 'object', properties: { ok: { type: 'boolean' } } } }),
      );
      const other = await h.another();
      expect(await other.jobInput(job.id)).toMatchObject({
        request: { key: '0', schema: { type: 'object' } },
      });
      expect(await other.answerInput(job.id, '0', { ok: true })).toMatchObject({ outcome: 'answered' });
      expect((await h.store.get(job.id))!.status).toBe('pending');
    });
  });
}

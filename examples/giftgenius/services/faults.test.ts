import { afterEach, describe, expect, it } from 'vitest';
import { FaultController, NO_FAULTS, parseFaults } from './faults.js';
import { startGiftService } from './gift.js';
import type { ServiceHandle } from './service.js';
import { call, sequence, until } from './testing.js';

let service: ServiceHandle | undefined;

afterEach(async () => {
  await service?.close();
  service = undefined;
});

async function start(random?: () => number): Promise<ServiceHandle> {
  service = await startGiftService({ random });
  return service;
}

const product = (s: ServiceHandle, signal?: AbortSignal) =>
  call('GET', `${s.url}/products/p001`, undefined, {}, signal);

describe('fault switches over HTTP and in process', () => {
  it('starts with every fault off, and PUT replaces, GET reads, DELETE clears', async () => {
    const s = await start();
    expect((await call('GET', `${s.url}/_faults`)).body).toEqual({ faults: NO_FAULTS, hanging_requests: 0 });
    const put = await call('PUT', `${s.url}/_faults`, { latencyMs: 5, errorRate: 0.25 });
    expect(put.body.faults).toEqual({
      latencyMs: 5,
      errorRate: 0.25,
      status: 0,
      statusOn: 'all',
      retryAfterS: 0,
      hang: false,
      commitThenDrop: false,
    });
    expect(s.faults.get()).toEqual(put.body.faults);
    // PUT replaces: what is left out is off.
    await call('PUT', `${s.url}/_faults`, { commitThenDrop: true });
    expect(s.faults.get()).toEqual({ ...NO_FAULTS, commitThenDrop: true });
    s.faults.set({ latencyMs: 7 });
    expect((await call('GET', `${s.url}/_faults`)).body.faults).toEqual({ ...NO_FAULTS, latencyMs: 7 });
    expect((await call('DELETE', `${s.url}/_faults`)).body.faults).toEqual(NO_FAULTS);
    expect(s.faults.get()).toEqual(NO_FAULTS);
  });

  it('answers 400 problem+json for invalid settings and keeps the previous ones', async () => {
    const s = await start();
    s.faults.set({ latencyMs: 3 });
    const range = await call('PUT', `${s.url}/_faults`, { errorRate: 1.5 });
    expect(range.status).toBe(400);
    expect(range.body).toEqual({
      type: 'https://giftgenius.example/problems/invalid_request',
      title: 'Invalid request',
      status: 400,
      code: 'invalid_request',
      detail: 'errorRate must be a number from 0 to 1.',
    });
    const unknown = await call('PUT', `${s.url}/_faults`, { slow: true });
    expect(unknown.body.detail).toBe(
      'Unknown fault "slow"; known: latencyMs, errorRate, status, statusOn, retryAfterS, hang, commitThenDrop.',
    );
    expect(s.faults.get()).toEqual({ ...NO_FAULTS, latencyMs: 3 });
    expect(() => s.faults.set({ latencyMs: -1 })).toThrow(RangeError);
    expect(() => s.faults.set({ hang: 'yes' as unknown as boolean })).toThrow('hang must be true or false.');
  });
});

describe('latency', () => {
  it('delays answers by at least latencyMs', async () => {
    const s = await start();
    s.faults.set({ latencyMs: 40 });
    const started = performance.now();
    expect((await product(s)).status).toBe(200);
    // A lower bound only: the fault must add its delay; how much more the machine adds is not our concern.
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
  });
});

describe('errorRate', () => {
  it('fails exactly the requests whose random draw is under the rate, with 503 problem+json', async () => {
    const s = await start(sequence(0.2, 0.7, 0.49));
    s.faults.set({ errorRate: 0.5 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await product(s)).status);
    expect(statuses).toEqual([503, 200, 503]);
    s.faults.set({ errorRate: 1 });
    const failed = await call('POST', `${s.url}/recommendations`, { interests: ['tea'], budget_usd: 50 });
    expect(failed.body).toEqual({
      type: 'https://giftgenius.example/problems/service_unavailable',
      title: 'Service unavailable',
      status: 503,
      code: 'service_unavailable',
      detail: 'The service is unavailable (injected fault).',
      injected: true,
    });
  });

  it('never draws while the rate is 0 and never touches /_faults itself', async () => {
    // The sequence throws when drawn from: any draw here would fail the requests with 500.
    const s = await start(sequence());
    expect((await product(s)).status).toBe(200);
    s.faults.set({ errorRate: 1 });
    expect((await call('GET', `${s.url}/_faults`)).status).toBe(200);
    expect((await call('DELETE', `${s.url}/_faults`)).status).toBe(200);
    expect((await product(s)).status).toBe(200);
  });
});

describe('status and retryAfterS', () => {
  const recommend = (s: ServiceHandle) =>
    call('POST', `${s.url}/recommendations`, { interests: ['tea'], budget_usd: 50 });

  it('answers every request with the status instead of handling it, with Retry-After when set', async () => {
    const s = await start();
    const put = await call('PUT', `${s.url}/_faults`, { status: 429, retryAfterS: 50 });
    expect(put.body.faults).toEqual({ ...NO_FAULTS, status: 429, retryAfterS: 50 });
    const limited = await recommend(s);
    expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, '50']);
    expect(limited.body).toEqual({
      type: 'https://giftgenius.example/problems/rate_limited',
      title: 'Too many requests',
      status: 429,
      code: 'rate_limited',
      detail: 'The service answered 429 instead of handling the request (injected fault).',
      injected: true,
    });
    expect((await product(s)).status).toBe(429);

    s.faults.set({ status: 500 });
    const failing = await product(s);
    expect([failing.status, failing.body.code, failing.headers.get('retry-after')]).toEqual([
      500,
      'internal_error',
      null,
    ]);
    s.faults.set({ status: 418 });
    expect((await product(s)).body).toMatchObject({ status: 418, code: 'request_refused', injected: true });
    s.faults.set({ status: 599 });
    expect((await product(s)).body).toMatchObject({ status: 599, code: 'server_error' });
    s.faults.clear();
    expect((await product(s)).status).toBe(200);
  });

  it('statusOn: reads answer the status while writes are handled, and writes the other way round', async () => {
    const s = await start();
    s.faults.set({ status: 503, statusOn: 'reads' });
    expect((await product(s)).status).toBe(503);
    expect((await recommend(s)).status).toBe(200);
    s.faults.set({ status: 502, statusOn: 'writes' });
    expect((await product(s)).status).toBe(200);
    expect((await recommend(s)).body).toMatchObject({ status: 502, code: 'bad_gateway' });
  });

  it('sends Retry-After with the errorRate 503s too', async () => {
    const s = await start(sequence(0.1));
    s.faults.set({ errorRate: 0.5, retryAfterS: 7 });
    const answer = await product(s);
    expect([answer.status, answer.body.code, answer.headers.get('retry-after')]).toEqual([
      503,
      'service_unavailable',
      '7',
    ]);
  });

  it('validates status, statusOn and retryAfterS, naming the field', async () => {
    const s = await start();
    const bad = await call('PUT', `${s.url}/_faults`, { status: 200 });
    expect([bad.status, bad.body.detail]).toEqual([
      400,
      'status must be 0 (off) or an HTTP error status from 400 to 599.',
    ]);
    expect(() => s.faults.set({ status: 503.5 })).toThrow('status must be 0 (off)');
    expect(() => s.faults.set({ status: '503' as unknown as number })).toThrow(RangeError);
    expect(() => s.faults.set({ status: 503, statusOn: 'posts' as 'all' })).toThrow(
      'statusOn must be "all", "reads" or "writes".',
    );
    expect(() => s.faults.set({ status: 503, retryAfterS: 1.5 })).toThrow(
      'retryAfterS must be a whole number of seconds from 0 to 86400.',
    );
    expect(() => s.faults.set({ status: 503, retryAfterS: 86_401 })).toThrow('retryAfterS must be');
    expect(() => s.faults.set({ retryAfterS: 5 })).toThrow(
      'retryAfterS is sent with injected errors only: set status or errorRate too.',
    );
    expect(s.faults.get()).toEqual(NO_FAULTS);
  });
});

describe('hang', () => {
  it('holds requests until the fault is cleared, then answers them', async () => {
    const s = await start();
    s.faults.set({ hang: true });
    const pending = [product(s), product(s)];
    await until(() => s.faults.hanging() === 2);
    s.faults.clear();
    expect((await Promise.all(pending)).map((a) => a.status)).toEqual([200, 200]);
    expect(s.faults.hanging()).toBe(0);
  });

  it('releases hanging requests when hang is switched off over HTTP', async () => {
    const s = await start();
    await call('PUT', `${s.url}/_faults`, { hang: true });
    const pending = product(s);
    await until(() => s.faults.hanging() === 1);
    expect((await call('GET', `${s.url}/_faults`)).body.hanging_requests).toBe(1);
    await call('PUT', `${s.url}/_faults`, { latencyMs: 1 });
    expect((await pending).status).toBe(200);
  });

  it('destroys hanging requests when the service closes, and close does not wait for them', async () => {
    const s = await start();
    s.faults.set({ hang: true });
    const pending = product(s);
    await until(() => s.faults.hanging() === 1);
    await s.close();
    await expect(pending).rejects.toThrow(TypeError);
    expect(s.faults.hanging()).toBe(0);
  });

  it('also destroys a request that is only delayed when the service closes', async () => {
    const s = await start();
    s.faults.set({ latencyMs: 600_000 });
    const pending = product(s);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await s.close();
    await expect(pending).rejects.toThrow(TypeError);
  });

  it('forgets a hanging request whose client went away', async () => {
    const s = await start();
    s.faults.set({ hang: true });
    const abort = new AbortController();
    const pending = product(s, abort.signal);
    await until(() => s.faults.hanging() === 1);
    abort.abort();
    await expect(pending).rejects.toThrow();
    await until(() => s.faults.hanging() === 0);
  });
});

describe('commitThenDrop', () => {
  it('drops the answers of POST requests but still answers reads', async () => {
    const s = await start();
    s.faults.set({ commitThenDrop: true });
    await expect(
      call('POST', `${s.url}/recommendations`, { interests: ['tea'], budget_usd: 50 }),
    ).rejects.toThrow(TypeError);
    expect((await product(s)).status).toBe(200);
  });

  it('keeps an injected error answer: nothing was handled, so there is no commit to drop', async () => {
    const s = await start();
    s.faults.set({ commitThenDrop: true, status: 503, statusOn: 'writes' });
    const refused = await call('POST', `${s.url}/recommendations`, { interests: ['tea'], budget_usd: 50 });
    expect([refused.status, refused.body.code]).toEqual([503, 'service_unavailable']);
  });
});

describe('FaultController', () => {
  it('draws an error below the rate only', () => {
    const controller = new FaultController(sequence(0.3, 0.3));
    controller.set({ errorRate: 0.3 });
    expect(controller.drawError()).toBe(false);
    controller.set({ errorRate: 0.31 });
    expect(controller.drawError()).toBe(true);
  });

  it('parses settings, filling what is left out with off', () => {
    expect(parseFaults({ hang: true })).toEqual({ ...NO_FAULTS, hang: true });
    expect(() => parseFaults([])).toThrow('Fault settings must be a JSON object.');
    expect(() => parseFaults({ errorRate: Number.NaN })).toThrow('errorRate must be a number from 0 to 1.');
    expect(() => parseFaults({ latencyMs: 600_001 })).toThrow(RangeError);
  });
});

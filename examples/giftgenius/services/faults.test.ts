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
    expect(put.body.faults).toEqual({ latencyMs: 5, errorRate: 0.25, hang: false, commitThenDrop: false });
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
      'Unknown fault "slow"; known: latencyMs, errorRate, hang, commitThenDrop.',
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

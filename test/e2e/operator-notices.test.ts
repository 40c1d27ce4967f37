/**
 * The notices wired into the real GiftGenius gateway and worker (`startGateway`, `startWorker`): a breaker
 * isolated and reset over the admin API prints its lines to the process's lines, as text by default and as
 * JSON lines (event and fields, the sentence as `msg`) when the gateway has a JSON log. Exact line texts and
 * pacing are proven on a fake clock in src/gateway/operator/; here the clock is real, so the time is a pattern.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createGiftGeniusApp } from '../../examples/giftgenius/app.js';
import { startWorker } from '../../src/gateway/worker.js';
import { FAST_SETTINGS, startBackends, startGiftGenius, tempDb, useCleanups } from './support.js';

const defer = useCleanups();
const AT = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ';
const ISOLATED = 'breaker gift isolated by hand; calls fail fast until it is reset';
const RESET = 'breaker gift reset by hand; calls flow again';

async function admin(url: string, path: string): Promise<number> {
  return (await fetch(`${url}${path}`, { method: 'POST' })).status;
}

describe('operator notices in the gateway and the worker', () => {
  it('text lines by default: the gift breaker isolated and reset over the admin API', async () => {
    const backends = await startBackends(defer);
    const lines: string[] = [];
    const gateway = await startGiftGenius(defer, backends, {
      dbPath: tempDb(defer),
      gateway: { log: (line) => lines.push(line) },
    });
    expect(await admin(gateway.url, '/admin/api/breakers/gift/isolate')).toBe(200);
    expect(await admin(gateway.url, '/admin/api/breakers/gift/reset')).toBe(200);
    expect(lines.filter((line) => / breaker /.test(line))).toEqual([
      expect.stringMatching(new RegExp(`^${AT} ${ISOLATED}$`)),
      expect.stringMatching(new RegExp(`^${AT} ${RESET}$`)),
    ]);
  });

  it('JSON lines with --log: the same sentence as msg, the facts as fields, nothing as text', async () => {
    const backends = await startBackends(defer);
    const lines: string[] = [];
    let output = '';
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        output += chunk.toString('utf8');
        done();
      },
    });
    const gateway = await startGiftGenius(defer, backends, {
      dbPath: tempDb(defer),
      gateway: { log: (line) => lines.push(line), logger: { level: 'info', stream } },
    });
    expect(await admin(gateway.url, '/admin/api/breakers/gift/isolate')).toBe(200);
    const notices = output
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => typeof line.event === 'string');
    expect(notices).toEqual([
      expect.objectContaining({
        level: 40,
        event: 'breaker_isolated',
        breaker: 'gift',
        from: 'closed',
        to: 'isolated',
        reason: 'isolated',
        msg: ISOLATED,
      }),
    ]);
    expect(lines.filter((line) => / breaker /.test(line))).toEqual([]);
  });

  it('a worker prints the same notices', async () => {
    const backends = await startBackends(defer);
    const lines: string[] = [];
    const worker = await startWorker({
      app: createGiftGeniusApp({ ...FAST_SETTINGS, ...backends.urls }),
      store: tempDb(defer),
      log: (line) => lines.push(line),
    });
    defer(() => worker.close());
    const gift = worker.parts.upstreams!.find((upstream) => upstream.name === 'gift')!;
    gift.breaker!.policy.isolate();
    expect(lines.filter((line) => / breaker /.test(line))).toEqual([
      expect.stringMatching(new RegExp(`^${AT} ${ISOLATED}$`)),
    ]);
  });
});

import { getEventListeners } from 'node:events';
import type { EventEmitter } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import { Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { CallAbort } from './call-abort.js';

describe('CallAbort', () => {
  it("follows its parent: the parent's reason, undici's listener called once, the parent's listener gone", () => {
    const parent = new AbortController();
    const call = new CallAbort(parent.signal);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    let heard = 0;
    call.once('abort', () => heard++);
    const reason = new Error('client left');
    parent.abort(reason);
    expect(call.aborted).toBe(true);
    expect(call.reason).toBe(reason);
    expect(heard).toBe(1);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    call.abort(new Error('later'));
    expect(call.reason).toBe(reason);
    expect(heard).toBe(1);
  });

  it('aborts on its own with a reason, or an AbortError without one; detaches from the parent', () => {
    const parent = new AbortController();
    const withReason = new CallAbort(parent.signal);
    const reason = new Error('first byte too late');
    let heard = 0;
    withReason.on('abort', () => heard++);
    withReason.abort(reason);
    expect([withReason.aborted, withReason.reason, heard]).toEqual([true, reason, 1]);

    const bare = new CallAbort(parent.signal);
    bare.abort();
    expect((bare.reason as DOMException).name).toBe('AbortError');
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    parent.abort(new Error('too late to matter'));
    expect(withReason.reason).toBe(reason);
  });

  it('a removed listener is not called; dispose stops following the parent', () => {
    const parent = new AbortController();
    const call = new CallAbort(parent.signal);
    let heard = 0;
    const listener = (): void => void heard++;
    call.once('abort', listener);
    call.removeListener('abort', listener);
    call.dispose();
    call.dispose();
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    parent.abort(new Error('after the call ended'));
    expect([call.aborted, heard]).toEqual([false, 0]);
  });

  it('a parent that has already aborted: aborted at once with its reason, nothing listened to', () => {
    const parent = new AbortController();
    const reason = new Error('gone before the call');
    parent.abort(reason);
    const call = new CallAbort(parent.signal);
    expect([call.aborted, call.reason]).toEqual([true, reason]);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
  });

  describe('as the signal of a real undici request', () => {
    const held: ServerResponse[] = [];
    let close: () => Promise<void> = async () => undefined;
    afterEach(async () => {
      for (const res of held.splice(0)) res.destroy();
      await close();
    });

    async function server(): Promise<Pool> {
      const http = createServer((req, res) => {
        req.resume();
        if (req.url === '/hang') held.push(res);
        else res.end('{"ok":true}');
      });
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      const pool = new Pool(`http://127.0.0.1:${(http.address() as { port: number }).port}`);
      close = async () => {
        await pool.close();
        await new Promise((resolve) => http.close(resolve));
      };
      return pool;
    }

    /** A request to `/hang` with `call` as its signal, once the server holds it (the promise is wrapped). */
    async function requestHeld(pool: Pool, call: CallAbort): Promise<{ result: Promise<unknown> }> {
      const result = pool.request({ path: '/hang', method: 'GET', signal: call as unknown as EventEmitter });
      result.catch(() => undefined);
      while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      return { result };
    }

    it('aborting rejects the request with our reason; a request that completes is left alone', async () => {
      const pool = await server();
      const parent = new AbortController();
      const ok = new CallAbort(parent.signal);
      const answer = await pool.request({
        path: '/ok',
        method: 'GET',
        signal: ok as unknown as EventEmitter,
      });
      expect(await answer.body.text()).toBe('{"ok":true}');
      ok.dispose();

      const hanging = new CallAbort(parent.signal);
      const pending = await requestHeld(pool, hanging);
      const reason = new Error('the first byte did not come in time');
      hanging.abort(reason);
      await expect(pending.result).rejects.toBe(reason);
    });

    it("the parent's abort reaches undici through the call", async () => {
      const pool = await server();
      const parent = new AbortController();
      const pending = await requestHeld(pool, new CallAbort(parent.signal));
      const reason = new Error('the client went away');
      parent.abort(reason);
      await expect(pending.result).rejects.toBe(reason);
    });
  });
});

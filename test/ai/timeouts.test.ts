/**
 * The first-byte timeout on real sockets and real time (the simulated provider paces its answer with real
 * timers): a stream that starts in time is never cut, however long it runs; a provider that has not sent a
 * byte by the deadline is abandoned and a fallback step serves, before the client has seen a byte.
 */
import { describe, expect, it } from 'vitest';
import { token } from '../../examples/llm-sim/index.js';
import { runFallbackChain, type AiFlow, type AiStep } from '../../src/ai/index.js';
import { ask, startGateway, startSim, until, useCleanups } from './support.js';

const defer = useCleanups();

const text = (n: number): string => Array.from({ length: n }, (_, i) => token(i)).join('');

describe('AI gateway: timeout to the first byte', () => {
  it('first byte at 300 ms, then 3 s of streaming, under a 1 s timeout: completes', async () => {
    const sim = await startSim(defer, { firstByteMs: 300, tokensPerSecond: 10 });
    const { client, logs } = await startGateway(defer, { sim });
    const { data: stream, response } = await client.chat.completions
      .create(
        { ...ask('sim/sim-1'), stream: true, max_tokens: 30 },
        {
          headers: { 'x-breakwater-request-timeout': '1000', 'x-breakwater-max-attempts': '1' },
        },
      )
      .withResponse();
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    expect(content).toBe(text(30));
    expect(response.headers.get('x-breakwater-attempts')).toBe('1');
    await until(() => logs.length === 1);
    expect(logs[0]!.outcome).toBe('ok');
    expect(logs[0]!.latency_ms).toBeGreaterThan(1_000); // ran past the timeout without being cut
  }, 15_000);

  const flow = (steps: AiStep[]): AiFlow => ({
    name: 'gift-ideas',
    version: 3,
    run: (request, ctx) => runFallbackChain(steps, request, ctx),
  });
  const steps: AiStep[] = [
    { name: 'primary', provider: 'slow', model: 'big', timeoutMs: 1_000, maxAttempts: 1 },
    { name: 'fallback', provider: 'fast', model: 'small' },
  ];

  it.each([false, true])(
    'first byte at 2 s: the fallback serves, and x-breakwater-step says so (stream: %s)',
    async (stream) => {
      const slow = await startSim(defer, { firstByteMs: 2_000 });
      const fast = await startSim(defer);
      const { client, logs } = await startGateway(
        defer,
        { slow, fast },
        {
          routes: (name) => (name === 'gift-ideas' ? flow(steps) : undefined),
        },
      );
      const { data, response } = await client.chat.completions
        .create({ ...ask('dynamic/gift-ideas'), stream, max_tokens: 5 })
        .withResponse();
      expect(response.status).toBe(200);
      expect(response.headers.get('x-breakwater-step')).toBe('fallback');
      expect(response.headers.get('x-breakwater-provider')).toBe('fast');
      expect(response.headers.get('x-breakwater-model')).toBe('small');
      expect(response.headers.get('x-breakwater-route')).toBe('gift-ideas@3');
      expect(response.headers.get('x-breakwater-attempts')).toBe('2');
      let content = '';
      if (stream) {
        for await (const chunk of data as AsyncIterable<{
          choices: { delta: { content?: string | null } }[];
        }>) {
          content += chunk.choices[0]?.delta.content ?? '';
        }
      } else {
        content = (data as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
      }
      expect(content).toBe(text(5));
      expect(slow.requests).toHaveLength(1);
      expect(fast.requests[0]!.model).toBe('small');
      await until(() => logs.length === 1);
      expect(logs[0]).toMatchObject({
        route: 'gift-ideas@3',
        step: 'fallback',
        outcome: 'ok',
        attempts: 2,
        failed_steps: ['primary:timeout'],
      });
    },
    15_000,
  );
});

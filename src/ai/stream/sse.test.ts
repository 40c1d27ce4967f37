import { describe, expect, it } from 'vitest';
import { errorFrame, readUsage, sseFrames, type StreamFindings } from './sse.js';

async function frames(
  chunks: string[],
  stripUsage = false,
): Promise<{ out: string[]; findings: StreamFindings }> {
  const buffers = chunks.map((c) => Buffer.from(c));
  const [first, ...rest] = buffers;
  const iterator = rest[Symbol.iterator]();
  const source = {
    first,
    rest: { next: async () => iterator.next() } as AsyncIterator<Buffer>,
  };
  const findings: StreamFindings = { usage: undefined, done: false };
  const out: string[] = [];
  for await (const frame of sseFrames(source, stripUsage, findings)) out.push(frame);
  return { out, findings };
}

const chunk = (content: string) => `data: {"choices":[{"delta":{"content":"${content}"}}],"usage":null}\n\n`;
const usage =
  'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}\n\n';

describe('sseFrames', () => {
  it('splits frames across chunk boundaries, including inside a UTF-8 character', async () => {
    const text = chunk('é') + chunk('b') + 'data: [DONE]\n\n';
    const bytes = Buffer.from(text);
    const at = text.indexOf('é') + 1; // inside the two bytes of é
    const source = {
      first: bytes.subarray(0, at),
      rest: (async function* () {
        yield bytes.subarray(at, at + 7);
        yield bytes.subarray(at + 7);
      })() as AsyncIterator<Buffer>,
    };
    const found: StreamFindings = { usage: undefined, done: false };
    const got: string[] = [];
    for await (const frame of sseFrames(source, false, found)) got.push(frame);
    expect(got).toEqual([chunk('é'), chunk('b'), 'data: [DONE]\n\n']);
    expect(found.done).toBe(true);
  });

  it('reads the usage chunk, and strips it when asked', async () => {
    const kept = await frames([chunk('a'), usage, 'data: [DONE]\n\n']);
    expect(kept.out).toEqual([chunk('a'), usage, 'data: [DONE]\n\n']);
    expect(kept.findings.usage).toEqual({ promptTokens: 5, completionTokens: 2, cachedTokens: 1 });
    const stripped = await frames([chunk('a') + usage + 'data: [DONE]\n\n'], true);
    expect(stripped.out).toEqual([chunk('a'), 'data: [DONE]\n\n']);
    expect(stripped.findings.usage?.completionTokens).toBe(2);
  });

  it('keeps usage that rides on a choice chunk, normalizes CRLF, passes comments and a last frame without its blank line', async () => {
    const onChoice = 'data: {"choices":[{"delta":{}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}';
    const { out, findings } = await frames(
      [': keep-alive\r\n\r\n', `${onChoice}\r\n\r\n`, 'data: [DONE]'],
      true,
    );
    expect(out).toEqual([': keep-alive\n\n', `${onChoice}\n\n`, 'data: [DONE]\n\n']);
    expect(findings.usage).toEqual({ promptTokens: 1, completionTokens: 1, cachedTokens: 0 });
  });

  it('a chunk that is one whole frame (the common case) is read the same as one split or batched', async () => {
    const usageNoSpace = usage.replace('data: ', 'data:');
    const multi = 'event: note\ndata: {"a":1}\ndata: {"b":2}\n\n';
    const whole = [chunk('a'), multi, ': comment\n\n', usageNoSpace, 'data:[DONE]\n\n'];
    for (const stripUsage of [false, true]) {
      const alone = await frames(whole, stripUsage);
      const batched = await frames([whole.join('')], stripUsage);
      const split = await frames(
        [...whole.join('')].map((c) => c),
        stripUsage,
      );
      const kept = stripUsage ? whole.filter((f) => f !== usageNoSpace) : whole;
      for (const run of [alone, batched, split]) {
        expect(run.out).toEqual(kept);
        expect(run.findings).toEqual({
          usage: { promptTokens: 5, completionTokens: 2, cachedTokens: 1 },
          done: true,
        });
      }
    }
  });

  it('throws what the body throws', async () => {
    const source = {
      first: Buffer.from(chunk('a')),
      rest: { next: () => Promise.reject(new Error('other side closed')) } as AsyncIterator<Buffer>,
    };
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const f of sseFrames(source, false, { usage: undefined, done: false })) got.push(f);
      })(),
    ).rejects.toThrow('other side closed');
    expect(got).toEqual([chunk('a')]);
  });

  it('readUsage wants whole counts; errorFrame is an OpenAI error event', () => {
    expect(readUsage({ prompt_tokens: 1 })).toBeUndefined();
    expect(readUsage({ prompt_tokens: -1, completion_tokens: 1 })).toBeUndefined();
    expect(readUsage(null)).toBeUndefined();
    expect(errorFrame('gone', 'stream_interrupted')).toBe(
      'event: error\ndata: {"error":{"message":"gone","type":"stream_error","code":"stream_interrupted"}}\n\n',
    );
  });
});

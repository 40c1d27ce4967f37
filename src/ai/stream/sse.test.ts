import { describe, expect, it } from 'vitest';
import { framesOf } from '../../../test/support/sse.js';
import { errorFrame, readUsage, SseFrameSplitter, type StreamFindings } from './sse.js';

/** Pushes `chunks` through a splitter and ends it: the frames written, the writes, and what was found. */
function frames(
  chunks: Array<string | Buffer>,
  stripUsage = false,
): { out: string[]; writes: string[]; findings: StreamFindings } {
  const findings: StreamFindings = { usage: undefined, done: false, textBytes: 0 };
  const writes: string[] = [];
  const splitter = new SseFrameSplitter(stripUsage, findings, { write: (f) => writes.push(f) > 0 }, true);
  for (const c of chunks) splitter.push(typeof c === 'string' ? Buffer.from(c) : c);
  splitter.end();
  return { out: framesOf(writes), writes, findings };
}

const chunk = (content: string) => `data: {"choices":[{"delta":{"content":"${content}"}}],"usage":null}\n\n`;
const usage =
  'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}\n\n';

describe('SseFrameSplitter', () => {
  it('splits frames across chunk boundaries, including inside a UTF-8 character', () => {
    const text = chunk('é') + chunk('b') + 'data: [DONE]\n\n';
    const bytes = Buffer.from(text);
    const at = text.indexOf('é') + 1; // inside the two bytes of é
    const { out, findings } = frames([
      bytes.subarray(0, at),
      bytes.subarray(at, at + 7),
      bytes.subarray(at + 7),
    ]);
    expect(out).toEqual([chunk('é'), chunk('b'), 'data: [DONE]\n\n']);
    expect(findings.done).toBe(true);
  });

  it('reads the usage chunk, and strips it when asked', () => {
    const kept = frames([chunk('a'), usage, 'data: [DONE]\n\n']);
    expect(kept.out).toEqual([chunk('a'), usage, 'data: [DONE]\n\n']);
    expect(kept.findings.usage).toEqual({ promptTokens: 5, completionTokens: 2, cachedTokens: 1 });
    const stripped = frames([chunk('a') + usage + 'data: [DONE]\n\n'], true);
    expect(stripped.out).toEqual([chunk('a'), 'data: [DONE]\n\n']);
    expect(stripped.findings.usage?.completionTokens).toBe(2);
  });

  it('keeps usage that rides on a choice chunk, normalizes CRLF, passes comments and a last frame without its blank line', () => {
    const onChoice = 'data: {"choices":[{"delta":{}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}';
    const { out, findings } = frames([': keep-alive\r\n\r\n', `${onChoice}\r\n\r\n`, 'data: [DONE]'], true);
    expect(out).toEqual([': keep-alive\n\n', `${onChoice}\n\n`, 'data: [DONE]\n\n']);
    expect(findings.usage).toEqual({ promptTokens: 1, completionTokens: 1, cachedTokens: 0 });
  });

  it('a chunk that is one whole frame (the common case) is read the same as one split or batched', () => {
    const usageNoSpace = usage.replace('data: ', 'data:');
    const multi = 'event: note\ndata: {"a":1}\ndata: {"b":2}\n\n';
    const whole = [chunk('a'), multi, ': comment\n\n', usageNoSpace, 'data:[DONE]\n\n'];
    for (const stripUsage of [false, true]) {
      const alone = frames(whole, stripUsage);
      const batched = frames([whole.join('')], stripUsage);
      const split = frames(
        [...whole.join('')].map((c) => c),
        stripUsage,
      );
      const kept = stripUsage ? whole.filter((f) => f !== usageNoSpace) : whole;
      for (const run of [alone, batched, split]) {
        expect(run.out).toEqual(kept);
        expect(run.findings).toEqual({
          usage: { promptTokens: 5, completionTokens: 2, cachedTokens: 1 },
          done: true,
          textBytes: 1, // the `a` of the first frame, whatever the chunking
        });
      }
    }
  });

  it("writes a chunk's whole frames at once; answers the sink's false; the end's write answers too", () => {
    const out: string[] = [];
    let room = 1;
    const findings: StreamFindings = { usage: undefined, done: false, textBytes: 0 };
    const splitter = new SseFrameSplitter(false, findings, { write: (f) => out.push(f) > 0 && room-- > 0 });
    expect(splitter.push(Buffer.from(chunk('a')))).toBe(true);
    expect(splitter.push(Buffer.from(chunk('b') + chunk('c') + 'data: [DO'))).toBe(false);
    expect(out).toEqual([chunk('a'), chunk('b') + chunk('c')]);
    room = 1;
    expect(splitter.push(Buffer.from('NE]'))).toBe(true); // no frame whole yet: nothing written
    expect(splitter.end()).toBe(true);
    expect(splitter.end()).toBe(true); // nothing left: nothing written again
    expect(out).toEqual([chunk('a'), chunk('b') + chunk('c'), 'data: [DONE]\n\n']);
    expect(findings.done).toBe(true);
  });

  it('a usage chunk stripped from the middle of a chunk: the frames around it are written, in two runs', () => {
    const { writes, findings } = frames([chunk('a') + chunk('b') + usage + 'data: [DONE]\n\n'], true);
    expect(writes).toEqual([chunk('a') + chunk('b') + 'data: [DONE]\n\n']);
    expect(findings).toEqual({
      usage: { promptTokens: 5, completionTokens: 2, cachedTokens: 1 },
      done: true,
      textBytes: 2,
    });
    // `"usage":null` on every chunk and a `usage` inside a string are not a usage object.
    const decoy = 'data: {"choices":[{"delta":{"content":"say \\"usage\\": {"}}],"usage":null}\n\n';
    const kept = frames([decoy + usage.replace('"usage":{', '"usage" :\t{')], true);
    expect(kept.writes).toEqual([decoy]);
    expect(kept.findings.usage?.completionTokens).toBe(2);
  });

  it('counts the text of content, reasoning, refusals and tool arguments, in UTF-8 bytes as sent, under any chunking', () => {
    const tool =
      'data: {"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":"{\\"q\\":1}"}}]}}]}\n\n';
    const text = [
      chunk('é€😀'), // 2 + 3 + 4 bytes
      'data: {"choices":[{"delta":{"reasoning_content": "hmm"}}]}\n\n', // a space after the colon too
      'data: {"choices":[{"delta":{"refusal":"no"}}]}\n\n',
      tool, // {\"q\":1} as sent: 9 characters
      'data: {"choices":[{"delta":{"content":"say \\"content\\": \\"x\\""}}]}\n\n', // a key inside the text
      ': comment with "content":"nothing"\n\n', // frames are not parsed: counted too (an overcount)
      usage,
      'data: [DONE]',
    ].join('');
    const expected = 9 + 3 + 2 + 9 + 22 + 7;
    const bytes = Buffer.from(text);
    for (const cut of [1, 2, 3, 7, 64, bytes.length]) {
      const pieces: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += cut) pieces.push(bytes.subarray(i, i + cut));
      expect(frames(pieces).findings.textBytes, `cut ${cut}`).toBe(expected);
    }
    // Not asked: nothing counted.
    const findings: StreamFindings = { usage: undefined, done: false, textBytes: 0 };
    new SseFrameSplitter(false, findings, { write: () => true }).push(Buffer.from(chunk('abc')));
    expect(findings.textBytes).toBe(0);
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

/**
 * Reading a provider's Server-Sent Events stream (WHATWG HTML, "Server-sent events"; OpenAI's chat
 * completion chunks): split into frames, each passed on verbatim; the usage chunk (`choices: []` and a
 * `usage` object, sent last when `stream_options.include_usage` is set) read for the cost and, when the
 * client did not ask for it, not passed on.
 */
import type { Usage } from '../types.js';
import { streamedTextBytes } from './text-bytes.js';

/** What a read of the stream found, filled in as it goes. */
export interface StreamFindings {
  usage: Usage | undefined;
  /** The provider sent `data: [DONE]`. */
  done: boolean;
  /** UTF-8 bytes of generated text in the frames read (see text-bytes.ts); counted only when asked. */
  textBytes: number;
}

/**
 * Splits a body pushed chunk by chunk into frames, each ending in a blank line, and writes the frames kept to
 * `out` as soon as they are whole: the whole frames of one chunk in one write. Line ends are normalized to
 * `\n` (a `\r\n` split between chunks is one); a UTF-8 character split across chunks is joined. Synchronous:
 * no promise, iterator or generator step per frame.
 */
export class SseFrameSplitter {
  private readonly decoder = new TextDecoder();
  private buffer = '';
  /** The last chunk's text ended in `\r`: a `\n` opening the next one is the same line end. */
  private cr = false;

  /**
   * @param stripUsage leave out the usage-only chunk.
   * @param findings filled in as frames pass.
   * @param out takes whole frames; its false (a full sink) is what `push` and `end` return.
   * @param countText count `findings.textBytes` (one more pass over each chunk's whole frames).
   */
  constructor(
    private readonly stripUsage: boolean,
    private readonly findings: StreamFindings,
    private readonly out: { write(frames: string): boolean },
    private readonly countText = false,
  ) {}

  /** Splits one chunk. False when its `write` answered false (the chunk's frames are all written still). */
  push(chunk: Buffer): boolean {
    let text = this.decoder.decode(chunk, { stream: true });
    if (text === '') return true; // part of one UTF-8 character
    if (this.cr && text.charCodeAt(0) === 0x0a) text = text.slice(1);
    this.cr = text.charCodeAt(text.length - 1) === 0x0d;
    if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
    const buffer = this.buffer === '' ? text : this.buffer + text;
    // Frames are passed on as runs (one write for all the frames of a chunk, as a pass-through proxy would),
    // and only a frame that may carry usage or be `[DONE]` is read: the positions of both are found once per
    // chunk and followed forward, so a chunk is scanned in one pass whatever its number of frames.
    let usageAt = buffer.indexOf('"usage"');
    let doneAt = buffer.indexOf('[DONE]');
    let from = 0; // where the next frame starts
    let start = 0; // where the run of kept frames not yet written starts
    let out = '';
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      let read = doneAt >= 0 && doneAt < end;
      while (!read && usageAt >= 0 && usageAt < end) {
        read = usageObjectAt(buffer, usageAt + 7);
        usageAt = buffer.indexOf('"usage"', usageAt + 7);
      }
      if (read && !keep(buffer.slice(from, end), this.stripUsage, this.findings)) {
        if (from > start) out += buffer.slice(start, from);
        start = end + 2;
      }
      from = end + 2;
      if (doneAt >= 0 && doneAt < from) doneAt = buffer.indexOf('[DONE]', from);
      if (usageAt >= 0 && usageAt < from) usageAt = buffer.indexOf('"usage"', from);
      end = buffer.indexOf('\n\n', from);
    }
    if (from > start) out = out === '' ? buffer.slice(start, from) : out + buffer.slice(start, from);
    if (this.countText && from > 0) this.findings.textBytes += streamedTextBytes(buffer, 0, from);
    this.buffer = from === buffer.length ? '' : buffer.slice(from);
    return out === '' || this.out.write(out);
  }

  /** The body ended: a last frame without its blank line is written whole. Same answer as `push`. */
  end(): boolean {
    const rest = (this.buffer + this.decoder.decode().replace(/\r\n?/g, '\n')).replace(/\n+$/, '');
    this.buffer = '';
    if (this.countText) this.findings.textBytes += streamedTextBytes(rest, 0, rest.length);
    if (rest.trim() === '' || !keep(rest, this.stripUsage, this.findings)) return true;
    return this.out.write(`${rest}\n\n`);
  }
}

/** Reads one frame's data into `findings`; false to leave the frame out. */
function keep(block: string, stripUsage: boolean, findings: StreamFindings): boolean {
  const data = dataOf(block);
  if (data === undefined) return true;
  if (data === '[DONE]') {
    findings.done = true;
    return true;
  }
  if (!data.includes('"usage"') || !/"usage"\s*:\s*\{/.test(data)) return true;
  let parsed: { usage?: unknown; choices?: unknown };
  try {
    parsed = JSON.parse(data) as typeof parsed;
  } catch {
    return true;
  }
  const usage = readUsage(parsed.usage);
  if (usage === undefined) return true;
  findings.usage = usage;
  return !(stripUsage && Array.isArray(parsed.choices) && parsed.choices.length === 0);
}

/**
 * Whether a `"usage"` key ending before `at` in `text` opens an object (`"usage": {`): every chunk carries
 * `"usage":null` when usage is asked for, and only the last one has an object. (A key and its value on two
 * `data:` lines is not seen: its cost is then unknown and the whole reservation is settled.)
 */
function usageObjectAt(text: string, at: number): boolean {
  let i = at;
  while (isBlank(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) !== 0x3a) return false; // ':'
  i++;
  while (isBlank(text.charCodeAt(i))) i++;
  return text.charCodeAt(i) === 0x7b; // '{'
}

/** JSON whitespace that can sit inside one line (a frame's line breaks were split off). */
function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/** The `data` of a frame (several `data:` lines joined by `\n`), or undefined when it has none. */
function dataOf(block: string): string | undefined {
  if (block.startsWith('data:') && !block.includes('\n')) return stripSpace(block.slice(5));
  let data: string | undefined;
  for (const line of block.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const value = stripSpace(line.slice(5));
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data;
}

function stripSpace(value: string): string {
  return value.startsWith(' ') ? value.slice(1) : value;
}

/**
 * An OpenAI `usage` object as {@link Usage}: `prompt_tokens`, `completion_tokens` and
 * `prompt_tokens_details.cached_tokens` (0 when absent). Undefined when the counts are not there.
 */
export function readUsage(value: unknown): Usage | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const u = value as {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    prompt_tokens_details?: { cached_tokens?: unknown } | null;
  };
  if (!isCount(u.prompt_tokens) || !isCount(u.completion_tokens)) return undefined;
  const cached = u.prompt_tokens_details?.cached_tokens;
  return {
    promptTokens: u.prompt_tokens,
    completionTokens: u.completion_tokens,
    cachedTokens: isCount(cached) ? cached : 0,
  };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * The frame that ends a client's stream when the provider broke off after streaming began: an `error`
 * event whose data carries an OpenAI-shaped `error` object (the official clients throw on it). No `[DONE]`
 * follows, so no client mistakes the partial answer for a complete one.
 */
export function errorFrame(message: string, code: string): string {
  return `event: error\ndata: ${JSON.stringify({ error: { message, type: 'stream_error', code } })}\n\n`;
}

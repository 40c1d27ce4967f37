/**
 * Reading a provider's Server-Sent Events stream (WHATWG HTML, "Server-sent events"; OpenAI's chat
 * completion chunks): split into frames, each passed on verbatim; the usage chunk (`choices: []` and a
 * `usage` object, sent last when `stream_options.include_usage` is set) read for the cost and, when the
 * client did not ask for it, not passed on.
 */
import type { Usage } from '../types.js';

/** What a read of the stream found, filled in as it goes. */
export interface StreamFindings {
  usage: Usage | undefined;
  /** The provider sent `data: [DONE]`. */
  done: boolean;
}

/**
 * Splits a body pushed chunk by chunk into frames, each ending in a blank line, and writes each frame kept to
 * `out` as soon as it is whole. Line ends are normalized to `\n` (a `\r\n` split between chunks is one); a
 * UTF-8 character split across chunks is joined. Synchronous: no promise, iterator or generator step per frame.
 */
export class SseFrameSplitter {
  private readonly decoder = new TextDecoder();
  private buffer = '';
  /** The last chunk's text ended in `\r`: a `\n` opening the next one is the same line end. */
  private cr = false;

  /**
   * @param stripUsage leave out the usage-only chunk.
   * @param findings filled in as frames pass.
   * @param out takes each frame; its false (a full sink) is what `push` and `end` return.
   */
  constructor(
    private readonly stripUsage: boolean,
    private readonly findings: StreamFindings,
    private readonly out: { write(frame: string): boolean },
  ) {}

  /** Splits one chunk. False when a `write` answered false (every frame of the chunk is written still). */
  push(chunk: Buffer): boolean {
    let text = this.decoder.decode(chunk, { stream: true });
    if (text === '') return true; // part of one UTF-8 character
    if (this.cr && text.charCodeAt(0) === 0x0a) text = text.slice(1);
    this.cr = text.charCodeAt(text.length - 1) === 0x0d;
    if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
    let open = true;
    // The common case, a chunk that is one whole frame (a token): passed on as decoded, not copied.
    if (this.buffer === '' && text.length > 2 && text.indexOf('\n\n') === text.length - 2) {
      if (keepData(dataOfFrame(text), this.stripUsage, this.findings)) open = this.out.write(text);
      return open;
    }
    let buffer = this.buffer + text;
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (keep(block, this.stripUsage, this.findings) && !this.out.write(`${block}\n\n`)) open = false;
      end = buffer.indexOf('\n\n');
    }
    this.buffer = buffer;
    return open;
  }

  /** The body ended: a last frame without its blank line is written whole. Same answer as `push`. */
  end(): boolean {
    const rest = (this.buffer + this.decoder.decode().replace(/\r\n?/g, '\n')).replace(/\n+$/, '');
    this.buffer = '';
    if (rest.trim() === '' || !keep(rest, this.stripUsage, this.findings)) return true;
    return this.out.write(`${rest}\n\n`);
  }
}

/** Reads one frame's data; false to leave the frame out. */
function keep(block: string, stripUsage: boolean, findings: StreamFindings): boolean {
  return keepData(dataOf(block), stripUsage, findings);
}

function keepData(data: string | undefined, stripUsage: boolean, findings: StreamFindings): boolean {
  if (data === undefined) return true;
  if (data === '[DONE]') {
    findings.done = true;
    return true;
  }
  // Cheap test first: every chunk carries `"usage":null` when usage is asked for; only the last has an object.
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

/** {@link dataOf} a whole frame, its closing blank line included: one slice for a one-line `data:` frame. */
function dataOfFrame(frame: string): string | undefined {
  if (frame.startsWith('data:') && frame.indexOf('\n') === frame.length - 2) {
    return frame.slice(frame.charCodeAt(5) === 0x20 ? 6 : 5, -2);
  }
  return dataOf(frame.slice(0, -2));
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

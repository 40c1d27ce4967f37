/**
 * The SSE frames in what a `FrameSink` was written, each with its blank line, cut left to right at each
 * `\n\n` as the gateway's splitter cuts them.
 * @throws Error when a write is not whole frames (a sink is written whole frames only).
 */
export function framesOf(writes: readonly string[]): string[] {
  const frames: string[] = [];
  for (const text of writes) {
    if (!text.endsWith('\n\n')) throw new Error(`A write that is not whole frames: ${JSON.stringify(text)}`);
    let from = 0;
    for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n', from)) {
      frames.push(text.slice(from, end + 2));
      from = end + 2;
    }
  }
  return frames;
}

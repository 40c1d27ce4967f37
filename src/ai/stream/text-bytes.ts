/**
 * How much text a chat completion stream carried: the UTF-8 bytes of the string values of `content`,
 * `reasoning_content`, `reasoning`, `refusal` and `arguments` (tool calls) in its frames, as they were sent
 * (JSON escapes counted as written, so `\n` is 2 and `\u00e9` 6). A stream whose provider never sent its
 * `usage` (the client left before the end, the provider broke off) is settled from this count (see
 * `producedMicroUsd` in pricing.ts).
 *
 * Found without parsing the frames: one regular-expression pass over the text of the whole frames of a
 * chunk, and for each value found a search for its closing quote. A key name inside a string value cannot
 * match (its quotes are escaped there), and the scan resumes after each value.
 */

/** A key whose value is generated text, then its opening quote (`"content": "`). */
const TEXT_KEY = /"(?:content|reasoning_content|reasoning|refusal|arguments)"[ \t]*:[ \t]*"/g;

const BACKSLASH = 0x5c;

/** The UTF-8 bytes of the generated text in `text` between `from` and `to` (whole frames). */
export function streamedTextBytes(text: string, from: number, to: number): number {
  let bytes = 0;
  TEXT_KEY.lastIndex = from;
  for (;;) {
    const match = TEXT_KEY.exec(text);
    if (match === null || match.index >= to) break;
    const start = TEXT_KEY.lastIndex;
    const end = closingQuote(text, start, to);
    bytes += utf8Bytes(text, start, end);
    TEXT_KEY.lastIndex = end + 1;
  }
  TEXT_KEY.lastIndex = 0;
  return bytes;
}

/** The index of the quote that closes the string whose content starts at `i` (or `to` when none does). */
function closingQuote(text: string, i: number, to: number): number {
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0 || quote >= to) return to;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    i = quote + 1;
  }
}

/** UTF-8 bytes of `text[start, end)` without making the substring. */
function utf8Bytes(text: string, start: number, end: number): number {
  let bytes = end - start;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c < 0xdc00) {
      bytes += 2; // a surrogate pair: 4 bytes for its 2 units
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/**
 * Reading Markdown as GitHub renders it, as far as links need: the anchors of a page's headings and the
 * links it makes. Headings inside fenced code blocks are not headings.
 */

/** Fences: three or more backticks or tildes, up to three spaces in (CommonMark, "Fenced code blocks"). */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** An ATX heading (`## Text`), its closing `#`s not included. */
const ATX_HEADING = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;

/** The lines of `text` outside fenced code blocks, with their 1-based line numbers. */
export function proseLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((raw, i) => {
    const open = FENCE.exec(raw);
    if (fence !== undefined) {
      // A fence closes with at least as many of the same character.
      if (open !== null && open[1]!.startsWith(fence)) fence = undefined;
      return;
    }
    if (open !== null) {
      fence = open[1]!;
      return;
    }
    out.push({ line: i + 1, text: raw });
  });
  return out;
}

/**
 * A heading's anchor as GitHub makes it (github-slugger): the rendered text lower-cased, every character that
 * is not a letter, mark, digit, connector (`_`), space or hyphen removed, spaces turned into hyphens. Inline
 * links count by their text, code spans by their content.
 */
export function slug(heading: string): string {
  const rendered = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1');
  return rendered
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor of a page: its headings' slugs, a repeated one suffixed `-1`, `-2`, … as GitHub does. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text } of proseLines(markdown)) {
    const heading = ATX_HEADING.exec(text);
    if (heading === null) continue;
    const base = slug(heading[1]!);
    let candidate = base;
    let n = seen.get(base) ?? 0;
    while (out.has(candidate)) candidate = `${base}-${++n}`;
    seen.set(base, n);
    out.add(candidate);
  }
  return out;
}

/**
 * The link targets of a Markdown page outside code (inline links and images, `[text](target "title")`),
 * with their line numbers. Inline code spans are skipped, so a link shown as code is not followed.
 */
export function markdownLinks(markdown: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  for (const { line, text } of proseLines(markdown)) {
    const prose = text.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      out.push({ line, target: m[1]! });
    }
  }
  return out;
}

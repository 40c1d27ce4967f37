/**
 * A parser of the Prometheus text exposition format (0.0.4) for the metrics tests (not a test file itself):
 * families with their HELP and TYPE, and samples with their labels, so tests assert exact values and exact
 * label sets rather than substrings.
 */

export interface Sample {
  /** The sample's own name (`…_bucket`, `…_sum`, `…_count` for a histogram). */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;

/** Parses an exposition; every sample must belong to a family declared by `# TYPE` before it. */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family & { help: string; type: string }>();
  const family = (name: string) => {
    let f = families.get(name);
    if (f === undefined) families.set(name, (f = { name, help: '', type: 'untyped', samples: [] }));
    return f;
  };
  let current: Family | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta !== null) {
      const f = family(meta[2]!);
      if (meta[1] === 'HELP') f.help = meta[3]!;
      else f.type = meta[3]!;
      current = f;
      continue;
    }
    const m = SAMPLE.exec(line);
    if (m === null) throw new Error(`not a sample line: ${line}`);
    const name = m[1]!;
    if (current === undefined || !(name === current.name || name.startsWith(`${current.name}_`))) {
      throw new Error(`sample ${name} outside its family`);
    }
    current.samples.push({ name, labels: parseLabels(m[2] ?? ''), value: parseValue(m[3]!) });
  }
  return families;
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const m = LABEL.exec(text);
    if (m === null) throw new Error(`bad labels: {${text}}`);
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  const value = Number(text);
  if (Number.isNaN(value) && text !== 'NaN') throw new Error(`bad value: ${text}`);
  return value;
}

/**
 * A family's samples as `{ 'label="v",…': value }` (labels sorted by name; `''` for none), only those named
 * `sampleName` (default the family's own name: counters and gauges).
 */
export function series(
  families: Map<string, Family>,
  familyName: string,
  sampleName = familyName,
): Record<string, number> {
  const f = families.get(familyName);
  if (f === undefined) throw new Error(`no family ${familyName}`);
  const out: Record<string, number> = {};
  for (const s of f.samples) {
    if (s.name !== sampleName) continue;
    const key = Object.keys(s.labels)
      .sort()
      .map((k) => `${k}="${s.labels[k]}"`)
      .join(',');
    out[key] = s.value;
  }
  return out;
}

/** A histogram's `_count` and `_sum` per label set (labels as in {@link series}). */
export function histogram(
  families: Map<string, Family>,
  familyName: string,
): Record<string, { count: number; sum: number }> {
  const counts = series(families, familyName, `${familyName}_count`);
  const sums = series(families, familyName, `${familyName}_sum`);
  const out: Record<string, { count: number; sum: number }> = {};
  for (const key of Object.keys(counts)) out[key] = { count: counts[key]!, sum: sums[key]! };
  return out;
}

/** A histogram's cumulative bucket counts of one label set, as `{ le: count }`. */
export function buckets(
  families: Map<string, Family>,
  familyName: string,
  labels: Readonly<Record<string, string>>,
): Record<string, number> {
  const f = families.get(familyName);
  if (f === undefined) throw new Error(`no family ${familyName}`);
  const out: Record<string, number> = {};
  for (const s of f.samples) {
    if (s.name !== `${familyName}_bucket`) continue;
    const { le, ...rest } = s.labels;
    const same =
      Object.keys(rest).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => rest[k] === v);
    if (same) out[le!] = s.value;
  }
  return out;
}

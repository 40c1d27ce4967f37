/**
 * The simulated provider's embeddings: deterministic unit vectors (the same input and dimensions always
 * give the same vector), OpenAI's `list` of `embedding` objects, `usage` counted like chat's prompt.
 */

/** The model and timestamp every listed model and answer carries. */
export const SIM_CREATED = 1_767_225_600;

/** Dimensions of a vector when the request sets none. */
export const DEFAULT_DIMENSIONS = 8;

/** The inputs of an embeddings body, one entry each: a string, or token ids. */
export function embeddingInputs(input: unknown): (string | number[])[] {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return [];
  if (typeof input[0] === 'number') return [input as number[]];
  return input as (string | number[])[];
}

/** Prompt tokens of one input: a quarter of a string's UTF-8 bytes rounded up (at least 1), or its token ids. */
export function inputTokens(item: string | number[]): number {
  return typeof item === 'string' ? Math.max(1, Math.ceil(Buffer.byteLength(item) / 4)) : item.length;
}

/**
 * The vector of `item`: `dimensions` float32 values from a generator seeded by a hash of the item, scaled to
 * unit length.
 */
export function embeddingVector(item: string | number[], dimensions: number): number[] {
  let seed = fnv1a(typeof item === 'string' ? item : JSON.stringify(item));
  const values: number[] = [];
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const v = (((t ^ (t >>> 14)) >>> 0) / 4_294_967_296) * 2 - 1;
    values.push(v);
    norm += v * v;
  }
  const scale = norm === 0 ? 0 : 1 / Math.sqrt(norm);
  return values.map((v) => Math.fround(v * scale));
}

/** The float32 little-endian bytes of `vector`, base64 (OpenAI's `encoding_format: 'base64'`). */
export function base64Vector(vector: number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString('base64');
}

/**
 * The answer to an embeddings `body`: one vector per input (`dimensions` from the body, else
 * `defaultDimensions`), `usage.prompt_tokens` the sum of {@link inputTokens} unless `fixedPromptTokens`.
 */
export function embeddingsAnswer(
  body: Record<string, unknown>,
  defaultDimensions: number,
  fixedPromptTokens: number | undefined,
): string {
  const inputs = embeddingInputs(body.input);
  const dimensions =
    typeof body.dimensions === 'number' && body.dimensions >= 1
      ? Math.floor(body.dimensions)
      : defaultDimensions;
  const base64 = body.encoding_format === 'base64';
  const promptTokens = fixedPromptTokens ?? inputs.reduce((sum, item) => sum + inputTokens(item), 0);
  return JSON.stringify({
    object: 'list',
    data: inputs.map((item, index) => {
      const vector = embeddingVector(item, dimensions);
      return { object: 'embedding', index, embedding: base64 ? base64Vector(vector) : vector };
    }),
    model: typeof body.model === 'string' ? body.model : 'sim',
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  });
}

/** FNV-1a, 32 bits. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

/**
 * `Mcp-Param-*` headers (2026-07-28 "Streamable HTTP", SEP-2243): a tool input property annotated
 * `x-mcp-header: "<Name>"` is mirrored by the client in an `Mcp-Param-<Name>` header, so intermediaries can
 * route on it without reading the body. The server checks that both agree before running the tool: a body
 * value without its header, a header that is not valid Base64 in its `=?base64?…?=` form, or a header that
 * decodes to another value is answered HTTP 400 with JSON-RPC error -32020 (HeaderMismatch). A body value
 * that is absent or `null` expects no header.
 */

/** JSON-RPC error code of a header/body disagreement (SEP-2243 HeaderMismatch). */
export const HEADER_MISMATCH = -32020;

/** One annotated property: where it sits in the arguments and the header that mirrors it. */
interface ParamHeader {
  path: string[];
  header: string;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const PREFIX = '=?base64?';
const SUFFIX = '?=';

/** The annotated properties of an input schema, reached through `properties` only (where SEP-2243 allows them). */
export function paramHeadersOf(inputSchema: Record<string, unknown>): ParamHeader[] {
  const found: ParamHeader[] = [];
  const visit = (node: unknown, path: string[], depth: number): void => {
    if (typeof node !== 'object' || node === null || depth > 16) return;
    const schema = node as Record<string, unknown>;
    const header = schema['x-mcp-header'];
    if (path.length > 0 && typeof header === 'string' && header.length > 0) found.push({ path, header });
    const properties = schema['properties'];
    if (typeof properties === 'object' && properties !== null)
      for (const [key, child] of Object.entries(properties)) visit(child, [...path, key], depth + 1);
  };
  visit(inputSchema, [], 0);
  return found;
}

/** The value a header carries: the decoded Base64 of its `=?base64?…?=` form, else the literal; undefined when that Base64 is bad. */
function decoded(value: string): string | undefined {
  if (!(value.startsWith(PREFIX) && value.endsWith(SUFFIX) && value.length >= PREFIX.length + SUFFIX.length))
    return value;
  const text = value.slice(PREFIX.length, value.length - SUFFIX.length);
  if (!BASE64.test(text)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(text, 'base64'));
  } catch {
    return undefined;
  }
}

/** A primitive argument as its header text (SEP-2243 conversions); undefined for anything else. */
function asText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/**
 * The disagreement between a call's arguments and its `Mcp-Param-*` headers, or undefined when they agree.
 * `headerOf` reads a request header by its (case-insensitive) name.
 */
export function paramHeaderMismatch(
  declared: readonly ParamHeader[],
  args: unknown,
  headerOf: (name: string) => string | undefined,
): { message: string; data: { mismatch: { header: string; body: string } } } | undefined {
  for (const { path, header } of declared) {
    let value: unknown = args;
    for (const key of path)
      value =
        typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
    const body = asText(value);
    if (body === undefined) continue;
    const name = `Mcp-Param-${header}`;
    const raw = headerOf(name);
    const problem =
      raw === undefined
        ? `the body carries ${path.join('.')} but the ${name} header is absent`
        : decoded(raw.trim()) === undefined
          ? `the ${name} header carries invalid Base64`
          : decoded(raw.trim()) !== body
            ? `the ${name} header and the body's ${path.join('.')} differ`
            : undefined;
    if (problem !== undefined)
      return {
        message: `Bad Request: ${problem}.`,
        data: { mismatch: { header: name, body: path.join('.') } },
      };
  }
  return undefined;
}

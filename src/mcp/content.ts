/**
 * Content blocks of a tool result (MCP 2025-11-25, "Tools" → "Tool Result"; the same blocks in 2026-07-28):
 * what a `resilientTool`'s `toContent` may answer besides text. Each block is checked before it leaves, so a
 * malformed one is a bug of the tool (an `internal_error` result), never a result the client's SDK rejects.
 */

/** Optional hints on a block (spec "Annotations"): who it is for, how important, when it changed. */
export interface ContentAnnotations {
  audience?: ('user' | 'assistant')[];
  /** 0 (least) to 1 (most important). */
  priority?: number;
  /** ISO 8601 timestamp. */
  lastModified?: string;
}

interface BlockBase {
  annotations?: ContentAnnotations;
  _meta?: Record<string, unknown>;
}

/** A text block. */
export interface TextContent extends BlockBase {
  type: 'text';
  text: string;
}

/** An image: `data` is base64 (standard alphabet, padded), `mimeType` e.g. `image/png`. */
export interface ImageContent extends BlockBase {
  type: 'image';
  data: string;
  mimeType: string;
}

/** Audio: `data` is base64 (standard alphabet, padded), `mimeType` e.g. `audio/wav`. */
export interface AudioContent extends BlockBase {
  type: 'audio';
  data: string;
  mimeType: string;
}

/** A resource's contents inline: `text`, or `blob` (base64), never both. */
export type EmbeddedResourceContents =
  | { uri: string; mimeType?: string; text: string; _meta?: Record<string, unknown> }
  | { uri: string; mimeType?: string; blob: string; _meta?: Record<string, unknown> };

/** A resource embedded in the result. */
export interface EmbeddedResource extends BlockBase {
  type: 'resource';
  resource: EmbeddedResourceContents;
}

/** A link to a resource the client may read (`resources/read`) or fetch, not its contents. */
export interface ResourceLink extends BlockBase {
  type: 'resource_link';
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  /** Bytes. */
  size?: number;
}

/** Any content block a tool result may carry. */
export type ContentBlock = TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const isString = (value: unknown): value is string => typeof value === 'string';
const nonEmpty = (value: unknown): value is string => isString(value) && value.length > 0;

/** The first problem of one block, or undefined when it is well-formed. */
function problemOf(block: unknown): string | undefined {
  if (typeof block !== 'object' || block === null || Array.isArray(block)) return 'is not an object';
  const b = block as Record<string, unknown>;
  switch (b['type']) {
    case 'text':
      return isString(b['text']) ? undefined : 'text: not a string';
    case 'image':
    case 'audio':
      if (!isString(b['data']) || !BASE64.test(b['data'])) return 'data: not base64';
      return nonEmpty(b['mimeType']) ? undefined : 'mimeType: not a non-empty string';
    case 'resource': {
      const r = b['resource'] as Record<string, unknown> | undefined;
      if (typeof r !== 'object' || r === null) return 'resource: not an object';
      if (!nonEmpty(r['uri'])) return 'resource.uri: not a non-empty string';
      if (isString(r['text']) === 'blob' in r) return 'resource: needs exactly one of text and blob';
      if ('blob' in r && (!isString(r['blob']) || !BASE64.test(r['blob'])))
        return 'resource.blob: not base64';
      return undefined;
    }
    case 'resource_link':
      if (!nonEmpty(b['uri'])) return 'uri: not a non-empty string';
      return nonEmpty(b['name']) ? undefined : 'name: not a non-empty string';
    default:
      return `type: ${JSON.stringify(b['type'])} is not text, image, audio, resource or resource_link`;
  }
}

/**
 * Checks the blocks a tool's `toContent` answered and returns them.
 * @throws TypeError naming the first bad block (`content[1].data: not base64`) or a non-array or empty answer.
 */
export function checkContent(blocks: unknown): ContentBlock[] {
  if (!Array.isArray(blocks) || blocks.length === 0)
    throw new TypeError('toContent must answer a non-empty array of content blocks');
  blocks.forEach((block, i) => {
    const problem = problemOf(block);
    if (problem !== undefined)
      throw new TypeError(`content[${i}]${problem.startsWith('is ') ? ' ' : '.'}${problem}`);
  });
  return blocks as ContentBlock[];
}

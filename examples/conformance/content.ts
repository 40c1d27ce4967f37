/**
 * The suite's tool fixtures whose results are not only text: `test_image_content`, `test_audio_content`,
 * `test_embedded_resource` and `test_multiple_content_types` (the `tools-call-*` scenarios), through
 * `resilientTool`'s `toContent`.
 */
import { resilientTool, type ContentBlock, type McpTool } from '../../src/entries/mcp.js';

/** A 1x1 red PNG (8-bit RGB), base64. */
export const RED_PIXEL_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';

/** A WAV file of `samples` samples of silence, 8 kHz mono 8-bit PCM, base64. */
export function silentWav(samples = 8): string {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + samples, 4);
  header.write('WAVEfmt ', 8, 'ascii');
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(8_000, 24); // sample rate
  header.writeUInt32LE(8_000, 28); // byte rate
  header.writeUInt16LE(1, 32); // block align
  header.writeUInt16LE(8, 34); // bits per sample
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(samples, 40);
  return Buffer.concat([header, Buffer.alloc(samples, 0x80)]).toString('base64');
}

/** The content tool fixtures, in the order `tools/list` shows them. */
export function contentTools(): McpTool[] {
  const fixture = (name: string, description: string, toContent: () => ContentBlock[]) =>
    resilientTool({
      name,
      description: `${description} (conformance fixture).`,
      inputSchema: {},
      annotations: { readOnlyHint: true },
      handler: () => ({}),
      toContent,
    });
  return [
    fixture('test_image_content', 'Answers a 1x1 red PNG', () => [
      { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' },
    ]),
    fixture('test_audio_content', 'Answers a short silent WAV', () => [
      { type: 'audio', data: silentWav(), mimeType: 'audio/wav' },
    ]),
    fixture('test_embedded_resource', 'Answers an embedded text resource', () => [
      {
        type: 'resource',
        resource: {
          uri: 'test://embedded-resource',
          mimeType: 'text/plain',
          text: 'This is an embedded resource content.',
        },
      },
    ]),
    fixture('test_multiple_content_types', 'Answers text, an image and an embedded resource', () => [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: JSON.stringify({ test: 'data', value: 123 }),
        },
      },
    ]),
  ];
}

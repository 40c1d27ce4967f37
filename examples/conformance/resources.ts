/**
 * The suite's static resource fixtures (`resources-list`, `resources-read-text`, `resources-read-binary`),
 * served with `resource` like any app's resources.
 */
import { resource, type McpResource } from '../../src/entries/mcp.js';

/** A 1x1 red PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==',
  'base64',
);

export function staticResources(): McpResource[] {
  return [
    resource({
      uri: 'test://static-text',
      name: 'static-text',
      description: 'A static text resource.',
      mimeType: 'text/plain',
      read: () => 'This is the content of the static text resource.',
    }),
    resource({
      uri: 'test://static-binary',
      name: 'static-binary',
      description: 'A static binary resource (a 1x1 PNG).',
      mimeType: 'image/png',
      read: () => new Uint8Array(PNG),
    }),
  ];
}

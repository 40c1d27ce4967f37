/**
 * The suite's resource fixtures (`resources-list`, `resources-read-text`, `resources-read-binary`,
 * `resources-templates-read`, `resources-subscribe`), served with `resource` and `resourceTemplate` like any app's resources.
 */
import {
  resource,
  resourceTemplate,
  type McpResource,
  type McpResourceTemplate,
} from '../../src/entries/mcp.js';

/** A 1x1 red PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==',
  'base64',
);

export function staticResources(): (McpResource | McpResourceTemplate)[] {
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
    resource({
      uri: 'test://watched-resource',
      name: 'watched-resource',
      description: 'A resource clients subscribe to (resources-subscribe).',
      mimeType: 'text/plain',
      read: () => 'This resource is watched.',
    }),
    resourceTemplate({
      uriTemplate: 'test://template/{id}/data',
      name: 'template-data',
      description: 'A resource template whose reads carry their id.',
      mimeType: 'application/json',
      read: ({ id }) => JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
    }),
  ];
}

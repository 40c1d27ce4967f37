import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { expectOptionsError } from '../../test/support/options.js';
import { prompt } from './prompt.js';
import { resource } from './resource.js';
import { resourceTemplate } from './resource-template.js';
import { createMcpServer } from './server.js';

describe('resource, prompt and their createMcpServer options', () => {
  it('resource names every bad option', () => {
    expectOptionsError(
      () =>
        resource({
          uri: 'no scheme',
          name: '',
          mimeType: '',
          deadlineMs: 30_001,
          read: 'text' as never,
        }),
      { owner: 'resource', options: ['uri', 'name', 'mimeType', 'deadlineMs', 'read'] },
    );
  });

  it('prompt names every bad option', () => {
    expectOptionsError(
      () =>
        prompt({
          name: 'a b',
          arguments: { occasion: 'birthday' } as never,
          get: undefined as never,
        }),
      { owner: 'prompt', options: ['name', 'arguments', 'get'] },
    );
  });

  it('resourceTemplate names every bad option', () => {
    expectOptionsError(
      () =>
        resourceTemplate({
          uriTemplate: 'gift://orders/{id*}',
          name: '',
          scopes: ['has space'],
          cacheHint: { ttlMs: -1, cacheScope: 'shared' as never },
          read: undefined as never,
          complete: { id: 'x' as never },
        }),
      {
        owner: 'resourceTemplate',
        options: [
          'uriTemplate',
          'name',
          'scopes',
          'cacheHint.ttlMs',
          'cacheHint.cacheScope',
          'read',
          'complete',
        ],
      },
    );
    expectOptionsError(
      () =>
        resourceTemplate({
          uriTemplate: 'gift://orders/{id}',
          name: 'o',
          read: () => '',
          complete: { other: () => [] },
        }),
      { owner: 'resourceTemplate', options: ['complete'] },
    );
  });

  it('prompt refuses completers of arguments it lacks', () => {
    expectOptionsError(
      () =>
        prompt({
          name: 'p',
          arguments: { a: z.string() },
          complete: { b: () => [] } as never,
          get: () => [],
        }),
      { owner: 'prompt', options: ['complete'] },
    );
  });

  it('createMcpServer refuses a duplicate URI or prompt name, and things not made by the builders', () => {
    const read = () => 'x';
    const get = () => [];
    expectOptionsError(
      () =>
        createMcpServer({
          name: 's',
          version: '1',
          tools: [],
          resources: [
            resource({ uri: 'a:1', name: 'one', read }),
            resource({ uri: 'a:1', name: 'two', read }),
          ],
          prompts: [prompt({ name: 'p', get }), prompt({ name: 'p', get })],
        }),
      { owner: 'createMcpServer', options: ['resources', 'prompts'] },
    );
    expectOptionsError(
      () =>
        createMcpServer({
          name: 's',
          version: '1',
          tools: [],
          resources: [{ uri: 'a:1' } as never],
        }),
      { owner: 'createMcpServer', options: ['resources'] },
    );
  });

  it('a prompt lists its arguments in order, optional ones as not required', () => {
    const brief = prompt({
      name: 'brief',
      arguments: { recipient: z.string(), occasion: z.string().describe('The occasion').optional() },
      get: () => [],
    });
    expect(brief.listing).toEqual({
      name: 'brief',
      arguments: [
        { name: 'recipient', required: true },
        { name: 'occasion', description: 'The occasion', required: false },
      ],
    });
  });
});

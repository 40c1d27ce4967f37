/**
 * The suite's prompt fixtures (`prompts-list`, `prompts-get-*`, `completion-complete`): names, arguments and
 * messages as `@modelcontextprotocol/conformance` expects them, served with `prompt` like any app's prompts.
 */
import { z } from 'zod';
import { prompt, type McpPrompt } from '../../src/entries/mcp.js';
import { RED_PIXEL_PNG } from './content.js';

/** What `completion/complete` offers for `arg1` of `test_prompt_with_arguments`, filtered by prefix. */
export const ARG1_COMPLETIONS = ['paris', 'park', 'party', 'test', 'testing'];

export function fixturePrompts(): McpPrompt[] {
  return [
    prompt({
      name: 'test_simple_prompt',
      description: 'A prompt without arguments (conformance fixture).',
      get: () => [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
    }),
    prompt({
      name: 'test_prompt_with_arguments',
      description: 'A prompt with two required arguments (conformance fixture).',
      arguments: {
        arg1: z.string().describe('First test argument'),
        arg2: z.string().describe('Second test argument'),
      },
      complete: { arg1: (value) => ARG1_COMPLETIONS.filter((item) => item.startsWith(value)) },
      get: ({ arg1, arg2 }) => [
        {
          role: 'user',
          content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` },
        },
      ],
    }),
    prompt({
      name: 'test_prompt_with_embedded_resource',
      description: 'A prompt embedding the resource it is given (conformance fixture).',
      arguments: { resourceUri: z.string().describe('URI of the resource to embed') },
      get: ({ resourceUri }) => [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: {
              uri: resourceUri,
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
    prompt({
      name: 'test_prompt_with_image',
      description: 'A prompt with an image (conformance fixture).',
      get: () => [
        { role: 'user', content: { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' } },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
      ],
    }),
  ];
}

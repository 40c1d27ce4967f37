/**
 * The conformance fixture app: the tools, resources and prompts that the official MCP
 * conformance suite (`@modelcontextprotocol/conformance`) calls in its server scenarios, served by a
 * Breakwater gateway like any app (`breakwater serve --app examples/conformance/app.ts`). `npm run
 * conformance` (test/conformance/run.ts) runs the suite against it; GiftGenius keeps its own end-to-end tests.
 *
 * One file per fixture group (`tools.ts`: text results, `content.ts`: image, audio and resource results,
 * `diagnostics.ts`: logging, JSON Schema and header tools, `resources.ts`: resources and templates,
 * `prompts.ts`: prompts and completions); a new group is a file whose parts this app adds.
 * What Breakwater cannot serve yet is listed, with its reason, in the suite's baselines
 * (test/conformance/expected-failures.*.yaml).
 *
 * Like the other examples, it imports `src/entries/<name>.js`, the file behind `breakwater/<name>`.
 */
import { defineApp, type AppParts, type BreakwaterApp } from '../../src/entries/gateway.js';
import { contentTools } from './content.js';
import { diagnosticTools } from './diagnostics.js';
import { fixturePrompts } from './prompts.js';
import { staticResources } from './resources.js';
import { textTools } from './tools.js';

export function createConformanceApp(): BreakwaterApp {
  return defineApp({
    setup(): AppParts {
      return {
        name: 'breakwater-conformance',
        version: '1.0.0',
        instructions: 'Fixtures of the MCP conformance suite; not an app for people.',
        tools: [...textTools(), ...contentTools(), ...diagnosticTools()],
        resources: staticResources(),
        prompts: fixturePrompts(),
      };
    },
  });
}

export default createConformanceApp();

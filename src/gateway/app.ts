/**
 * The application contract: what a module passed to `breakwater serve --app <module>` (or to
 * `startGateway`) exports. The app defines its job types on the runtime it is given and returns its tools
 * and dependencies; the gateway does the rest (store, HTTP, MCP, worker, shutdown).
 */
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import type { Clock } from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import type { Store } from '../store/index.js';
import type { Upstream } from '../upstream/index.js';
import type { CounterStore } from '../store/index.js';
import type { McpPrompt, McpResource, McpResourceTemplate, McpTool } from '../mcp/index.js';
import type { AuditLog, OperationLedger } from '../operations/index.js';
import type { AiGatewayOptions } from '../ai/index.js';
import type { WebhookDeclarations } from '../webhooks/index.js';
import type { AppRoutes } from '../server/index.js';

/** What an app's `setup` gets. */
export interface AppContext {
  /** The store the gateway opened (SQLite or PostgreSQL). */
  store: Store;
  /** The jobs runtime: define the app's job types here (`jobs.defineJob`); the gateway starts the worker. */
  jobs: Jobs;
  /**
   * The operation ledger: run side-effecting calls through `operations.execute(action, request)`, and
   * `operations.define(action)` every action at setup so this process recovers its unsettled operations
   * (docs/operations.md).
   */
  operations: OperationLedger;
  /** The tamper-evident audit log (`audit.record({ actor, action, target, … })`). */
  audit: AuditLog;
  clock: Clock;
  /** The gateway's public base URL, e.g. `http://127.0.0.1:8787` (job status and event URLs use it). */
  publicUrl: string;
  /** `serve`: a gateway (with or without a worker); `worker`: a worker-only process (tools are not served). */
  role: 'serve' | 'worker';
  /**
   * `store.counters` when the operator asked for shared breakers (`serve --shared-breakers`,
   * `BREAKWATER_SHARED_BREAKERS=1`), else undefined (breakers per process, the default). Give it to the
   * app's upstreams as `breaker: { shared: { store: context.sharedBreakers } }` (docs/deploy.md).
   */
  sharedBreakers?: CounterStore;
  /** Environment variables, for the app's own settings (default `process.env`). */
  env: NodeJS.ProcessEnv;
  /** Prints a line for the operator (stdout by default). */
  log(line: string): void;
}

/** The AI gateway's settings an app gives; the gateway supplies the store, clock, logger and routes. */
export type AppAiOptions = Omit<
  AiGatewayOptions,
  'store' | 'rateLimitStore' | 'clock' | 'logger' | 'routes' | 'routeNames'
>;

/** What an app's `setup` returns. */
export interface AppParts {
  /** The MCP server's name and version, as sent in `initialize`. */
  name: string;
  version: string;
  /** Instructions for the model, sent in `initialize`. */
  instructions?: string;
  /** The MCP tools (`resilientTool`, `jobTool`). */
  tools?: readonly McpTool[];
  /**
   * The MCP resources (`resource`) and resource templates (`resourceTemplate`): `resources/list`,
   * `resources/templates/list` and `resources/read` (docs/mcp.md).
   */
  resources?: readonly (McpResource | McpResourceTemplate)[];
  /** The MCP prompts (`prompt`): `prompts/list` and `prompts/get` (docs/mcp.md). */
  prompts?: readonly McpPrompt[];
  /** The app's dependencies: their breakers are listed by `/readyz`, and they are closed at shutdown. */
  upstreams?: readonly Upstream[];
  /**
   * Webhook sources (`defineWebhookSource`) and their handlers (`onWebhook`): the gateway serves
   * `POST /webhooks/:source` and the loopback-only `/admin/webhooks…`, and every process with a worker runs
   * the handlers as jobs (docs/webhooks.md).
   */
  webhooks?: WebhookDeclarations;
  /**
   * The AI gateway (docs/ai-gateway.md): providers, prices, rate and spend rules, defaults. The gateway
   * serves `POST /v1/chat/completions` with them, keeps rate windows and spend budgets in its store (so they
   * hold across instances on PostgreSQL) and resolves `dynamic/<route>` from the store's versioned routes.
   */
  ai?: AppAiOptions;
  /**
   * The app's own HTTP routes (docs/http.md, "An app's own routes"): a Fastify plugin, or
   * `{ plugin, prefix, access }` to mount it under a prefix (default the root) or open it to other callers
   * (default: whoever may call `/mcp`). Behind the gateway's edge like every route; `config.idempotency`
   * honours `Idempotency-Key` with keys bound to the calling principal. A route at a path the gateway serves
   * (`/mcp`, `/jobs`, `/admin`, `/v1`, …) is refused at startup (see `mountAppRoutes`). Served by `serve`
   * only, not by a worker.
   */
  routes?: AppRoutes;
  /** Called last at shutdown (after the worker stopped and the HTTP server closed). */
  close?(): Promise<void>;
}

/** A Breakwater application. */
export interface BreakwaterApp {
  setup(context: AppContext): AppParts | Promise<AppParts>;
}

/** Declares an app (an identity function that gives the module's default export its type). */
export function defineApp(app: BreakwaterApp): BreakwaterApp {
  return app;
}

/** tsx's loaders, registered once per process by the first TypeScript app {@link loadApp} loads. */
let typescript: Promise<void> | undefined;

/**
 * Loads an app module (its default export, or an export named `app`) from a path relative to `cwd`. A
 * TypeScript module (`.ts`, `.mts`, `.cts`) loads as it is: tsx's loaders are registered for the process
 * first, unless this code itself runs as TypeScript (then a loader is in place already). A CommonJS module
 * (such as a `.ts` file in a package without `"type": "module"`) may export the app as `exports.default`.
 * @throws Error naming the module when it cannot be imported or exports no app.
 */
export async function loadApp(path: string, cwd: string = process.cwd()): Promise<BreakwaterApp> {
  const url = pathToFileURL(resolve(cwd, path)).href;
  let mod: { default?: unknown; app?: unknown };
  try {
    if (/\.[mc]?ts$/.test(path) && !import.meta.url.endsWith('.ts')) {
      typescript ??= Promise.all([import('tsx/cjs/api'), import('tsx/esm/api')]).then(([cjs, esm]) => {
        cjs.register();
        esm.register();
      });
      await typescript;
    }
    mod = (await import(url)) as typeof mod;
  } catch (error) {
    throw new Error(`cannot load the app module ${path}: ${(error as Error).message}`, { cause: error });
  }
  const inner = (mod.default ?? {}) as { default?: unknown; app?: unknown };
  const app = [mod.default, mod.app, inner.default, inner.app].find(
    (value) => typeof (value as Partial<BreakwaterApp> | null | undefined)?.setup === 'function',
  );
  if (app === undefined) {
    throw new Error(
      `the app module ${path} must export an app (export default defineApp({ setup(context) { ... } }))`,
    );
  }
  return app as BreakwaterApp;
}

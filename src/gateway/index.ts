/**
 * gateway/: the library that runs a whole Breakwater process from an app module: `defineApp` (what an app
 * declares), `startGateway` (the HTTP gateway: API, MCP, AI, webhooks, dashboard) and `startWorker` (the job
 * worker). cli/ parses arguments and calls these; nothing here imports cli/.
 */
export {
  defineApp,
  loadApp,
  type AppAiOptions,
  type AppContext,
  type AppParts,
  type BreakwaterApp,
} from './app.js';
export { startGateway } from './gateway.js';
export { GATEWAY_DEFAULTS, type Gateway, type GatewayOptions } from './types.js';
export type { GatewayOAuthOptions } from './auth.js';
export type { AppRoutes, AppRoutesOptions, AppRoutesPlugin } from '../server/index.js';
export { startWorker, type WorkerOptions, type WorkerProcess } from './worker.js';

/**
 * `breakwater/gateway`: a whole Breakwater process from an app module: `defineApp`, `startGateway`
 * (API, MCP, AI gateway, webhooks, dashboard) and `startWorker` (the job worker).
 */
export {
  defineApp,
  loadApp,
  type AppAiOptions,
  type AppContext,
  type AppParts,
  type AppRoutes,
  type AppRoutesOptions,
  type AppRoutesPlugin,
  type BreakwaterApp,
  GATEWAY_DEFAULTS,
  startGateway,
  type Gateway,
  type GatewayOptions,
  type GatewayOAuthOptions,
  startWorker,
  type WorkerOptions,
  type WorkerProcess,
} from '../gateway/index.js';

/**
 * Versioned route flows of the AI gateway (docs/ai-gateway.md#routes): the definition format
 * (model steps, fallbacks, conditions on metadata, percentage splits, limit checks with an `else`), its
 * compilation into an `AiFlow`, the resolver over `store.routes` that picks up deploys and rollbacks
 * without a restart, and the loopback-only admin API.
 *
 * Wiring:
 * ```ts
 * const resolver = createRouteResolver({ routes: store.routes, counters: store.counters });
 * const gateway = createAiGateway({ providers, store, routes: resolver.resolve });
 * await gateway.routes(app);
 * await routeAdminRoutes(app, { routes: store.routes, resolver, providers: Object.keys(providers) });
 * ```
 */
export {
  ROUTE_DEFINITION_BOUNDS,
  jsonPath,
  modelSteps,
  parseRouteDefinition,
  type ConditionalNode,
  type FallbackNode,
  type LimitNode,
  type ModelNode,
  type ParseRouteOptions,
  type RouteIssue,
  type RouteLimitRule,
  type RouteNode,
  type SplitNode,
} from './definition.js';
export {
  CONDITION_BOUNDS,
  compileCondition,
  type ConditionOperators,
  type ConditionTest,
  type RouteCondition,
} from './conditions.js';
export { compileRoute, hashUnit, type CompileRouteOptions, type RouteFlow } from './flow.js';
export { memoryLimitStores, type RouteLimitStores } from './route-limits.js';
export {
  ROUTE_RESOLVER_DEFAULTS,
  createRouteResolver,
  type RouteResolver,
  type RouteResolverOptions,
} from './resolver.js';
export {
  MAX_ROUTE_NOTE_LENGTH,
  createRouteVersion,
  deployRouteVersion,
  rollbackRoute,
  rollbackTarget,
  type RouteDeployment,
} from './manage.js';
export { headView, routeAdminRoutes, versionView, type RouteAdminOptions } from './admin.js';

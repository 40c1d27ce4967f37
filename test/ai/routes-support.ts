/**
 * Shared helpers of the route tests (not a test file itself): a SQLite store in a temporary folder, a route
 * created and deployed in one call, and the gateway started with the store-backed resolver.
 */
import type { SimulatedProvider } from '../../examples/llm-sim/index.js';
import type { AiGatewayOptions } from '../../src/ai/index.js';
import {
  createRouteResolver,
  type ModelNode,
  type RouteResolver,
  type RouteResolverOptions,
} from '../../src/ai/routes/index.js';
import type { Clock, Principal } from '../../src/core/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { type Store } from '../../src/store/index.js';
import { startGateway, tempDb, type RunningGateway } from './support.js';
export { seeded } from '../support/random.js';

/** A SQLite store in a fresh temporary folder, closed after the test. */
export async function sqliteStore(defer: (cleanup: () => unknown) => void, clock?: Clock): Promise<Store> {
  const store = await openSqliteStore({ path: tempDb(defer, 'breakwater-routes'), clock });
  defer(() => store.close());
  return store;
}

/** Stores `definition` as a new version of `name` and deploys it; resolves the version. */
export async function deploy(store: Store, name: string, definition: unknown): Promise<number> {
  const { version } = await store.routes.create(name, definition);
  await store.routes.deploy(name, version);
  return version;
}

/** A model step node (`provider` default `sim`, `model` default the step's name). */
export function step(name: string, extra: Partial<ModelNode> = {}): ModelNode {
  return { type: 'model', name, provider: 'sim', model: name, ...extra };
}

/** Request options carrying `metadata` in `x-breakwater-metadata`. */
export function withMetadata(metadata: Record<string, unknown>): { headers: Record<string, string> } {
  return { headers: { 'x-breakwater-metadata': JSON.stringify(metadata) } };
}

/** The gateway over `sims` with a resolver on `store.routes` (its counters in `store.counters`). */
export async function routeGateway(
  defer: (cleanup: () => unknown) => void,
  sims: Record<string, SimulatedProvider>,
  store: Store,
  options: {
    resolver?: Partial<RouteResolverOptions>;
    gateway?: Partial<AiGatewayOptions>;
    /** Principals by bearer key (see `startGateway`). */
    principals?: Readonly<Record<string, Principal>>;
  } = {},
): Promise<RunningGateway & { resolver: RouteResolver }> {
  const resolver = createRouteResolver({
    routes: store.routes,
    counters: store.counters,
    ...options.resolver,
  });
  const running = await startGateway(
    defer,
    sims,
    { ...options.gateway, routes: resolver.resolve, routeNames: resolver.names },
    options.principals,
  );
  return { ...running, resolver };
}

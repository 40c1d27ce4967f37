/**
 * The gateway's admin side, assembled: the admin check (token from `BREAKWATER_ADMIN_TOKEN`, else loopback
 * only) and the dashboard with its JSON API over the app's parts. Kept apart from gateway.ts so that file
 * stays about the order things start and stop in.
 */
import type { Clock } from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import type { Store } from '../store/index.js';
import { createApiKeys, type ApiKeys } from '../http/keys/index.js';
import {
  adminTokenOption,
  createAdminAuth,
  createDashboard,
  type AdminAuth,
  type Dashboard,
} from '../server/index.js';
import type { AiGateway } from '../ai/index.js';
import type { Pruner } from '../store/index.js';
import type { OperationLedger } from '../operations/index.js';
import type { WebhookIngress } from '../webhooks/index.js';
import type { AppParts } from './app.js';

/**
 * The admin token: the `adminToken` option when given, else `BREAKWATER_ADMIN_TOKEN` (unset or empty: none,
 * and the admin routes answer loopback clients only).
 */
export function adminToken(option: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const token = option ?? env.BREAKWATER_ADMIN_TOKEN;
  return token === undefined || token.trim() === '' ? undefined : token.trim();
}

/**
 * Checks the admin token before anything opens, so a bad one is a startup error naming the variable.
 * @throws RangeError naming `BREAKWATER_ADMIN_TOKEN` when the token is shorter than 16 characters or has
 *   whitespace (the value is never printed).
 */
export function checkAdminToken(token: string | undefined): void {
  try {
    adminTokenOption('createAdminAuth', token);
  } catch (error) {
    throw new RangeError(
      'BREAKWATER_ADMIN_TOKEN must be at least 16 characters without whitespace (e.g. `openssl rand -hex 24`)',
      { cause: error },
    );
  }
}

/**
 * The admin check of a gateway, its dashboard sessions in `store.sessions` (shared by every gateway on the
 * store: a logout on one ends the session on all).
 * @throws RangeError naming `BREAKWATER_ADMIN_TOKEN` as {@link checkAdminToken}.
 */
export function gatewayAdminAuth(token: string | undefined, store: Store, clock: Clock): AdminAuth {
  checkAdminToken(token);
  return createAdminAuth({ token, sessions: store.sessions, clock });
}

/** What {@link gatewayDashboard} is built from. */
export interface GatewayDashboardParts {
  auth: AdminAuth;
  parts: AppParts;
  store: Store;
  jobs: Jobs;
  operations: OperationLedger;
  webhooks: WebhookIngress | undefined;
  ai: AiGateway | undefined;
  publicUrl: string;
  clock: Clock;
  /**
   * The gateway's API keys, managed at `/admin/api/keys…`: pass the instance the HTTP edge verifies with, so
   * a revoke there is refused at once (default: one of its own on `store`, whose revocations reach the edge
   * within its cache time).
   */
  keys?: ApiKeys;
  /** The gateway's pruner: the store's size on the overview. */
  pruner?: Pruner;
}

/** The dashboard over a gateway's parts: its upstreams, webhook handlers, ingress, AI gateway and store. */
export function gatewayDashboard(g: GatewayDashboardParts): Dashboard {
  const ai = g.parts.ai;
  return createDashboard({
    auth: g.auth,
    jobs: g.jobs,
    store: g.store,
    operations: g.store.operations,
    recoverOperations: () => g.operations.recover(),
    upstreams: g.parts.upstreams ?? [],
    handlerBreakers: (g.parts.webhooks?.handlers ?? []).flatMap((h) =>
      h.breaker === undefined ? [] : [h.breaker],
    ),
    webhooks: g.webhooks,
    ai:
      g.ai === undefined || ai === undefined
        ? undefined
        : {
            onRequest: (listener) => g.ai!.onRequest(listener),
            spend: {
              rules: ai.spendRules ?? [],
              providers: Object.keys(ai.providers),
              models: Object.keys(ai.prices ?? {}),
              counters: g.store.counters,
            },
          },
    publicUrl: g.publicUrl,
    keys: g.keys ?? createApiKeys({ store: g.store, clock: g.clock }),
    storeSize: g.pruner,
    clock: g.clock,
  });
}

/**
 * server/admin: the dashboard (docs/http.md#admin-api-and-dashboard) — the admin check in front of every
 * admin route, the admin JSON API behind the page, the in-memory series of its charts, and the actions the
 * CLI shares with the API.
 */
export {
  ADMIN_AUTH_DEFAULTS,
  adminTokenOption,
  createAdminAuth,
  isLoopbackAddress,
  isLoopbackHost,
  refuseCrossSite,
  type AdminAccess,
  type AdminAuth,
  type AdminAuthOptions,
} from './auth.js';
export {
  RECONCILE_DEFAULTS,
  reconcileOperation,
  retryDeadLetter,
  type ReconcileOptions,
  type ReconcileOutcome,
  type ReconcileResult,
} from './actions.js';
export { createDashboard, type Dashboard, type DashboardOptions } from './dashboard.js';
export { endedAdminSession } from './routes.js';
export { ADMIN_SESSION_DEFAULTS, type SessionRefusal } from './sessions.js';
export {
  OVERVIEW_LIMITS,
  type AdminWebhooks,
  type OverviewView,
  type QueueView,
  type WebhookSourceView,
} from './overview.js';
export {
  REJECTION_CODES,
  SERIES_DEFAULTS,
  createSeries,
  type RejectionCode,
  type Series,
  type SeriesOptions,
  type SeriesPoint,
  type SeriesView,
} from './series.js';
export type { AdminSpendSource, SpendCounterView, SpendRuleView } from './spend.js';
export { DEFAULT_WEB_ROOT, WEB_FILES } from './static.js';
export type { AdminBreaker, BreakerView, BulkheadView, OperationView } from './views.js';

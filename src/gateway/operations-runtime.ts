/**
 * The operation ledger and audit log of a gateway or worker process, and what they record on their own:
 * job ends, accepted webhook deliveries and admin actions over HTTP.
 */
import { userInfo } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { getLogger } from '../core/index.js';
import type { Clock } from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import type { Store } from '../store/index.js';
import { OperationLedger, createAuditLog, type AuditLog, type LedgerLog } from '../operations/index.js';
import { endedAdminSession } from '../server/index.js';
import type { WebhookIngress } from '../webhooks/index.js';

/**
 * The audit log and the operation ledger of a process. `BREAKWATER_AUDIT_KEY` (at least 16 bytes), when set,
 * keys the audit chain with HMAC-SHA-256; use the same key in every process and for `breakwater audit verify`.
 * The ledger's warnings (an operation escalated to `needs_attention`) go to the operator's log.
 * `checkEveryMs` is how often its recovery loop looks at unsettled operations (default the ledger's 5 000).
 */
export function operationsRuntime(
  store: Store,
  clock: Clock,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
  checkEveryMs?: number,
): { audit: AuditLog; operations: OperationLedger } {
  const audit = createAuditLog({ store: store.audit, clock, hmacKey: auditKey(env) });
  // Warnings to the operator's lines and the JSON log; transitions to the JSON log only.
  const warn: LedgerLog['warn'] = (fields, message) => {
    log(`warning: ${message} ${describeFields(fields)}`);
    getLogger()?.warn(fields, message);
  };
  const info: LedgerLog['info'] = (fields, message) => getLogger()?.info(fields, message);
  return {
    audit,
    operations: new OperationLedger({
      store: store.operations,
      audit,
      clock,
      log: { warn, info },
      checkEveryMs,
    }),
  };
}

/** The admin routes whose successful calls are audited, by route pattern. */
const AUDITED_ROUTES: Readonly<Record<string, string>> = {
  '/jobs/:id/cancel': 'admin.job_cancel',
  '/admin/webhooks/:source/:eventId/replay': 'admin.webhook_replay',
  '/admin/ai/routes/:name/versions': 'admin.route_create',
  '/admin/ai/routes/:name/deploy': 'admin.route_deploy',
  '/admin/ai/routes/:name/rollback': 'admin.route_rollback',
  '/admin/api/breakers/:name/isolate': 'admin.breaker_isolate',
  '/admin/api/breakers/:name/reset': 'admin.breaker_reset',
  '/admin/api/jobs/:id/retry': 'admin.job_retry',
  '/admin/api/operations/:id/reconcile': 'admin.operation_reconcile',
  '/admin/api/keys': 'admin.key_create',
  '/admin/api/keys/:id/revoke': 'admin.key_revoke',
  '/admin/login': 'admin.login',
  '/admin/logout': 'admin.logout',
};

/**
 * Audits each admin action over HTTP that succeeded, and each refused admin login (`admin.login_failed` for
 * a wrong token, `admin.login_throttled` for one refused by the throttle). A logout is audited
 * (`admin.logout`) only when it revoked a live session: one without a session changed nothing. The actor is the caller's
 * principal (`key:<id>`, `admin`, `local`; `http:<address>` for a caller the edge did not name), the client
 * address is in `data.ip`; the target is the path, or for a 201 the `Location` of what it created (a new API
 * key's). Nothing of the request's or the answer's body is recorded (a new key's secret is only in the body),
 * and the presented token never is.
 */
export function auditAdminActions(http: FastifyInstance, audit: AuditLog): void {
  http.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? '';
    let action = AUDITED_ROUTES[route];
    if (action === undefined || request.method !== 'POST') return;
    if (route === '/admin/logout' && !endedAdminSession(request)) return;
    if (reply.statusCode >= 400) {
      if (route !== '/admin/login') return;
      if (reply.statusCode === 401) action = 'admin.login_failed';
      else if (reply.statusCode === 429) action = 'admin.login_throttled';
      else return;
    }
    const principal = (request.principal as { id?: string } | null)?.id;
    const actor = principal === undefined || principal === 'stranger' ? `http:${request.ip}` : principal;
    const location = reply.getHeader('location');
    const target =
      reply.statusCode === 201 && typeof location === 'string' ? location : request.url.split('?', 1)[0]!;
    await audit
      .record({ actor, action, target, data: { ip: request.ip } })
      .catch((error: unknown) => warnAuditFailed(action!, error));
  });
}

/**
 * Audits what this process settled: each job end its worker wrote and each webhook delivery it stored. The
 * record is appended right after the state's own commit (not in its transaction, so the hot paths pay no
 * extra fsync): a crash in between loses the audit line, never the state.
 */
export function auditJobsAndWebhooks(
  audit: AuditLog,
  jobs: Jobs,
  webhooks: WebhookIngress | undefined,
): void {
  jobs.onSettled((event) => {
    const error = (event.payload as { error?: { code?: unknown } } | null)?.error;
    audit
      .record({
        actor: 'worker',
        action: event.type,
        target: event.jobId,
        data: typeof error?.code === 'string' ? { seq: event.seq, error: error.code } : { seq: event.seq },
      })
      .catch((err: unknown) => warnAuditFailed(event.type, err));
  });
  webhooks?.onAccepted((receipt) => {
    const { source, id, jobId } = receipt.record;
    audit
      .record({
        actor: `webhook:${source}`,
        action: 'webhook.accepted',
        target: `${source}/${receipt.eventId}`,
        data: { event_type: receipt.eventType, inbox_id: id, job_id: jobId },
      })
      .catch((err: unknown) => warnAuditFailed('webhook.accepted', err));
  });
}

function warnAuditFailed(action: string, error: unknown): void {
  const warning = new Error(
    `audit: recording ${action} failed: ${(error as Error)?.message ?? String(error)}`,
    {
      cause: error,
    },
  );
  warning.name = 'BreakwaterAuditWarning';
  process.emitWarning(warning);
}

/** `key=value` pairs of a log line's fields (an error by its message). */
function describeFields(fields: object): string {
  return Object.entries(fields)
    .map(([key, value]) => `${key}=${value instanceof Error ? value.message : JSON.stringify(value)}`)
    .join(' ');
}

/** The audit chain's HMAC key from `BREAKWATER_AUDIT_KEY` (unset or empty: an unkeyed chain). */
export function auditKey(env: NodeJS.ProcessEnv): string | undefined {
  const key = env.BREAKWATER_AUDIT_KEY;
  return key === undefined || key === '' ? undefined : key;
}

/**
 * Audits an admin action taken from the command line (actor `cli:<user>`), appended and committed before
 * the command exits, keyed like every other writer of the chain (`BREAKWATER_AUDIT_KEY`). A failure to record
 * it is a warning; the action itself already happened.
 */
export async function auditCliAction(
  store: Store,
  entry: { action: string; target: string; operationId?: string; data?: unknown },
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (a container): keep 'unknown'
  }
  await createAuditLog({ store: store.audit, hmacKey: auditKey(env) })
    .record({ actor: `cli:${user}`, ...entry })
    .catch((error: unknown) => warnAuditFailed(entry.action, error));
}

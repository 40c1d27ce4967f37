import type { FastifyInstance } from 'fastify';
import { BreakwaterError, type Clock } from '../core/index.js';
import type { BreakerSummary } from './options.js';

/** What the health routes need. */
export interface HealthRoutesOptions {
  ready: () => Promise<unknown>;
  readyTimeoutMs: number;
  breakers: () => readonly BreakerSummary[];
  clock: Clock;
}

/** A breaker as `/readyz` lists it (snake_case, `opened_at` ISO 8601). */
export interface OpenBreakerView {
  name: string;
  state: string;
  opened_at: string | null;
  retry_after_ms: number | null;
}

/**
 * `GET /healthz` (liveness: the process answers, `{ status: 'ok' }`) and `GET /readyz` (readiness: the store
 * answered the probe within `readyTimeoutMs` → 200 `{ status: 'ready', open_breakers }`; otherwise 503
 * `upstream_unavailable` problem+json with the same `open_breakers`).
 *
 * An open breaker does not make the instance unready: it protects one dependency, and other tools still work
 * (bulkhead and breaker isolation: docs/policies.md#bulkhead). Taking the instance out of rotation would turn
 * one failing backend into a full outage, and every instance would see the same breaker open. Breakers are
 * listed so dashboards and operators can see them.
 */
export function healthRoutes(app: FastifyInstance, options: HealthRoutesOptions): void {
  app.get('/healthz', async (_request, reply) => {
    void reply.header('cache-control', 'no-store');
    return { status: 'ok' };
  });

  app.get('/readyz', async (_request, reply) => {
    const open = openBreakers(options.breakers());
    void reply.header('cache-control', 'no-store');
    try {
      await withTimeout(options.ready, options.readyTimeoutMs, options.clock);
    } catch (error) {
      throw new BreakwaterError('upstream_unavailable', {
        message: 'The job store is not reachable; this instance is not ready.',
        source: 'store',
        details: { open_breakers: open },
        cause: error,
      });
    }
    return { status: 'ready', open_breakers: open };
  });
}

function openBreakers(all: readonly BreakerSummary[]): OpenBreakerView[] {
  return all
    .filter((b) => b.state !== 'closed')
    .map((b) => ({
      name: b.name,
      state: b.state,
      opened_at: typeof b.openedAt === 'number' ? new Date(b.openedAt).toISOString() : null,
      retry_after_ms: typeof b.retryAfterMs === 'number' ? b.retryAfterMs : null,
    }));
}

/** Runs the probe; a probe still pending after `timeoutMs` fails (a hung pool must not hang the check). */
async function withTimeout(probe: () => Promise<unknown>, timeoutMs: number, clock: Clock): Promise<void> {
  let timer: unknown;
  const late = new Promise<never>((_resolve, reject) => {
    timer = clock.setTimeout(
      () => reject(new BreakwaterError('timeout', { message: 'The readiness probe timed out.' })),
      timeoutMs,
    );
  });
  try {
    await Promise.race([Promise.resolve().then(probe), late]);
  } finally {
    clock.clearTimeout(timer);
  }
}

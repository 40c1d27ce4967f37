import { HttpProblem, bodyObject, integerField, requiredString } from './problem.js';
import { startService } from './service.js';
import type { ServiceHandle, ServiceOptions } from './service.js';

/** A recorded analytics event; `received_at` is an ISO 8601 timestamp. */
export interface AnalyticsEvent {
  event_id: string;
  name: string;
  properties: Record<string, unknown>;
  received_at: string;
}

/** Default and maximum `limit` of `GET /events`. */
export const DEFAULT_EVENTS_LIMIT = 100;
export const MAX_EVENTS_LIMIT = 1000;

/** Options of the analytics service: where it listens and how many events it keeps (default 10000). */
export interface AnalyticsServiceOptions extends ServiceOptions {
  maxEvents?: number;
}

/**
 * Starts the analytics service, an in-memory event log that keeps the newest `maxEvents` events:
 * - `POST /events` with `{ name (1..100 characters), properties?: object }` → 202 `{ accepted: true, event_id }`;
 *   400 `invalid_request` for a bad body.
 * - `GET /events?limit=N` (1..1000, default 100) → 200 `{ events, total }`, newest first; `total` counts
 *   every event received since start.
 * - `/_faults` (see `registerFaults`); latency here is how "analytics may lag" is shown.
 */
export function startAnalyticsService(options: AnalyticsServiceOptions = {}): Promise<ServiceHandle> {
  const maxEvents = options.maxEvents ?? 10_000;
  if (!Number.isInteger(maxEvents) || maxEvents < 1) {
    throw new RangeError('startAnalyticsService: maxEvents must be a positive integer.');
  }
  const events: AnalyticsEvent[] = [];
  let total = 0;

  return startService('analytics', options, (app) => {
    app.post('/events', async (request, reply) => {
      const body = bodyObject(request.body);
      const name = requiredString(body, 'name', 100);
      const properties = body.properties ?? {};
      if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) {
        throw new HttpProblem(400, 'invalid_request', 'properties must be a JSON object when given.');
      }
      total += 1;
      const event: AnalyticsEvent = {
        event_id: `evt_${String(total).padStart(6, '0')}`,
        name,
        properties: properties as Record<string, unknown>,
        received_at: new Date().toISOString(),
      };
      events.push(event);
      // Drop the oldest in bulk rather than one shift per event.
      if (events.length > maxEvents * 1.25) events.splice(0, events.length - maxEvents);
      return reply.code(202).send({ accepted: true, event_id: event.event_id });
    });

    app.get<{ Querystring: { limit?: string } }>('/events', async (request) => {
      const raw = request.query.limit;
      const limit =
        raw === undefined
          ? DEFAULT_EVENTS_LIMIT
          : integerField(/^\d{1,7}$/.test(String(raw)) ? Number(raw) : NaN, 'limit', 1, MAX_EVENTS_LIMIT);
      const kept = events.slice(-maxEvents);
      return { events: kept.slice(-limit).reverse(), total };
    });
  });
}

import type { FastifyInstance } from 'fastify';
import { toBreakwaterError, toProblem, type Disposable } from '../core/index.js';
import { callerPrincipal, type Jobs } from '../jobs/index.js';
import { TERMINAL_STATUSES } from '../store/index.js';
import { JOB_ID_PARAMS, accessibleJob } from './jobs-routes.js';
import type { ServerState } from './lifecycle.js';
import { pathOf } from '../http/index.js';
import { SseStream, StreamSlots, parseLastEventId, type StreamSlotLimits } from './sse.js';
import { releaseRequestTimeout } from './request-timeout.js';

/** What the events route needs. */
export interface EventsRouteOptions extends StreamSlotLimits {
  jobs: Jobs;
  state: ServerState;
  keepAliveMs: number;
  maxStreamBufferBytes: number;
}

/**
 * `GET /jobs/:id/events`: the job's events as server-sent events. Replays the stored events after
 * `Last-Event-ID` (header, else `?last_event_id=`), then follows live ones through `jobs.subscribe` (each
 * once, in seq order, no gap), and ends after the terminal event.
 *
 * A finished job with nothing after `Last-Event-ID` answers 204: the spec has an `EventSource` stop
 * reconnecting on 204, so a browser that reconnects after the terminal event is told "done" instead of
 * looping. Checked before the headers go out: for a finished job the headers wait for the first replayed
 * event; for any other job they go out at once.
 *
 * The reply is hijacked, so the inbound request timeout does not apply; the subscription and the keep-alive
 * timer are released when the client goes away.
 *
 * Only the job's owner and `admin` may follow it (anyone else: the 404 of an unknown id). Open streams are
 * capped per principal (`maxStreamsPerPrincipal`: past it 429 `rate_limited`) and in all (`maxStreams`: 503
 * `overloaded`), both with `Retry-After: 5`; a refused or answered-at-once request (404, 204) holds no slot.
 */
export function eventsRoute(app: FastifyInstance, options: EventsRouteOptions): void {
  const { jobs, state } = options;
  const slots = new StreamSlots(options);

  app.get<{ Params: { id: string }; Querystring: { last_event_id?: string } }>(
    '/jobs/:id/events',
    {
      // A HEAD would open a stream that sends nothing until the job ends.
      exposeHeadRoute: false,
      schema: {
        params: JOB_ID_PARAMS,
        querystring: {
          type: 'object',
          properties: { last_event_id: { type: 'string', maxLength: 32 } },
        },
      },
    },
    async (request, reply) => {
      const id = request.params.id;
      const fromSeq = parseLastEventId(request.headers['last-event-id'], request.query.last_event_id);
      const job = await accessibleJob(jobs, request, id);
      // Reserved before the hijack (a refusal is still an ordinary problem answer), released on close.
      const release = slots.take(callerPrincipal(request.principal).id);

      reply.hijack();
      releaseRequestTimeout(request);
      let subscription: Disposable | undefined;
      let closed = false;
      const stream = new SseStream(
        reply.raw,
        {
          clock: state.clock,
          keepAliveMs: options.keepAliveMs,
          maxBufferBytes: options.maxStreamBufferBytes,
        },
        () => {
          closed = true;
          release();
          subscription?.dispose();
          state.streams.delete(stream);
        },
      );
      state.streams.add(stream);
      if (!TERMINAL_STATUSES.has(job.status)) stream.open();

      const sub = jobs.subscribe(
        id,
        fromSeq,
        (event) => {
          stream.open();
          stream.send(event);
        },
        {
          onEnd: (error) => {
            if (stream.isOpen) return stream.end();
            if (error === undefined) return stream.answer(204);
            // The job vanished between the read above and the subscription's own read.
            const problem = toBreakwaterError(error);
            stream.answer(problem.status, toProblem(problem, pathOf(request)));
          },
        },
      );
      // The client may have gone while subscribing; the close handler then ran with nothing to dispose.
      if (closed) sub.dispose();
      else subscription = sub;
    },
  );
}

/**
 * Writing a step's answer to the client: a non-streamed one as the provider's bytes with the gateway's
 * headers (the cost included); a streamed one as SSE frames, with the headers sent before the first frame.
 * A stream that fails after it began ends with an SSE `error` event and never a clean `[DONE]`.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { errorFrame } from '../stream/sse.js';
import type { JsonStepAnswer, StepAnswer, StreamStepAnswer } from '../types.js';

/** The gateway's headers on a served answer. */
export function answerHeaders(
  answer: StepAnswer,
  requestId: string,
  route: string | null,
): Record<string, string> {
  const headers: Record<string, string> = {
    'x-request-id': requestId,
    'x-breakwater-step': answer.step.name,
    'x-breakwater-provider': answer.step.provider,
    'x-breakwater-model': answer.step.model,
    'x-breakwater-attempts': String(answer.attempts + answer.failedAttempts),
    ...answer.rateHeaders,
  };
  if (route !== null) headers['x-breakwater-route'] = route;
  return headers;
}

/** Sends a non-streamed answer; `x-breakwater-cost-usd` when its cost is known. */
export function sendJson(
  reply: FastifyReply,
  answer: JsonStepAnswer,
  headers: Record<string, string>,
): FastifyReply {
  const cost = answer.outcome.costUsd;
  return reply
    .code(answer.status)
    .headers(cost === undefined ? headers : { ...headers, 'x-breakwater-cost-usd': cost })
    .header('content-type', 'application/json')
    .send(answer.raw);
}

/** How a piped stream ended for the client. */
export interface PipeResult {
  /** Whether any frame was written. */
  wrote: boolean;
  /** `ok`, `stream_error` (the error event was sent) or `canceled` (the client left). */
  outcome: 'ok' | 'stream_error' | 'canceled';
}

/**
 * Streams `answer` to the client on the raw response (the reply is hijacked: Fastify's handler timeout
 * does not cut a stream). Waits for `drain` when the client reads slower than the provider writes. A client
 * that leaves cancels the provider's request: `signal` (the request's) says so, for a response queued behind
 * another pipelined one too, which has no connection yet and emits no 'close'.
 */
export async function pipeStream(
  reply: FastifyReply,
  answer: StreamStepAnswer,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<PipeResult> {
  reply.hijack();
  const res = reply.raw;
  let gone = false;
  const onGone = (): void => {
    if (gone) return;
    gone = true;
    answer.cancel();
    res.destroy();
  };
  signal.addEventListener('abort', onGone);
  if (signal.aborted) onGone();
  if (!gone) {
    res.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      // no-transform: a compressing proxy would buffer the stream; X-Accel-Buffering: nginx would too.
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    });
  }
  let wrote = false;
  try {
    for await (const frame of answer.frames) {
      if (gone) break;
      wrote = true;
      if (!res.write(frame)) await drained(res, signal);
    }
    if (gone) return { wrote, outcome: 'canceled' };
    res.end();
    return { wrote, outcome: 'ok' };
  } catch {
    if (gone) return { wrote, outcome: 'canceled' };
    const provider = answer.step.provider;
    res.end(
      errorFrame(
        `The provider ${provider} broke off the stream before it was complete.`,
        'stream_interrupted',
      ),
    );
    return { wrote, outcome: 'stream_error' };
  } finally {
    signal.removeEventListener('abort', onGone);
  }
}

/** Resolves on `drain`, or at once when the client is gone (`signal`). */
function drained(res: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.once('drain', done);
    signal.addEventListener('abort', done);
    if (signal.aborted) done();
  });
}

/**
 * Writing a step's answer to the client: a non-streamed one as the provider's bytes with the gateway's
 * headers (the cost included); a streamed one as SSE frames, with the headers sent before the first frame.
 * A stream that fails after it began ends with an SSE `error` event and never a clean `[DONE]`.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { AtGraceEnd } from '../../core/index.js';
import { errorFrame } from '../stream/sse.js';
import type { FrameSink, JsonStepAnswer, StepAnswer, StreamStepAnswer } from '../types.js';

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
 * does not cut a stream). Frames are written as the provider's chunks arrive; when the client reads slower
 * than the provider writes, the provider is paused until the response drains. A client that leaves cancels
 * the provider's request: `signal` (the request's) says so, for a response queued behind another pipelined
 * one too, which has no connection yet and emits no 'close'. With `atGraceEnd` (the host server's), a graceful
 * close that runs out of grace ends the stream with the `shutting_down` error event (the provider's request
 * canceled) before the connection is destroyed. Resolves once the response ended; never rejects.
 */
export function pipeStream(
  reply: FastifyReply,
  answer: StreamStepAnswer,
  headers: Record<string, string>,
  signal: AbortSignal,
  atGraceEnd?: AtGraceEnd,
): Promise<PipeResult> {
  reply.hijack();
  return new Promise((resolve) =>
    new ResponseSink(reply.raw, answer, headers, signal, resolve).start(atGraceEnd),
  );
}

/** The client's response as a stream's sink, for one answer. */
class ResponseSink implements FrameSink {
  private wrote = false;
  private over = false;
  /** Unregisters {@link cut} from the host's graceful close. */
  private unregister: (() => void) | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly answer: StreamStepAnswer,
    private readonly headers: Record<string, string>,
    private readonly signal: AbortSignal,
    private readonly resolve: (result: PipeResult) => void,
  ) {}

  start(atGraceEnd: AtGraceEnd | undefined): void {
    if (this.signal.aborted) {
      this.gone();
      return;
    }
    this.signal.addEventListener('abort', this.gone);
    this.unregister = atGraceEnd?.(this.cut);
    this.res.writeHead(200, {
      ...this.headers,
      'content-type': 'text/event-stream; charset=utf-8',
      // no-transform: a compressing proxy would buffer the stream; X-Accel-Buffering: nginx would too.
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    });
    this.res.on('drain', this.drained);
    this.answer.pipe(this);
  }

  write(frames: string): boolean {
    if (this.over) return true;
    this.wrote = true;
    return this.res.write(frames);
  }

  end(error?: unknown): void {
    if (this.over) return;
    // The client left: its signal's other listener, the provider call's, may have ended the stream first.
    if (this.signal.aborted) {
      this.gone();
      return;
    }
    if (error === undefined) {
      this.res.end();
      this.close('ok');
      return;
    }
    const provider = this.answer.step.provider;
    this.res.end(
      errorFrame(
        `The provider ${provider} broke off the stream before it was complete.`,
        'stream_interrupted',
      ),
    );
    this.close('stream_error');
  }

  private readonly drained = (): void => this.answer.resume();

  /** The client left: the provider's request is canceled and the response destroyed. */
  private readonly gone = (): void => {
    if (this.over) return;
    this.close('canceled');
    this.answer.cancel();
    this.res.destroy();
  };

  /**
   * The server's graceful close ran out of grace: the client gets an error event it can read (the official
   * clients throw it) instead of a connection cut mid-frame, and the provider's request is canceled.
   */
  private readonly cut = (): void => {
    if (this.over) return;
    this.res.end(
      errorFrame(
        'The gateway is shutting down and cut the stream before it was complete; send the request again.',
        'shutting_down',
      ),
    );
    this.close('stream_error');
    this.answer.cancel();
  };

  private close(outcome: PipeResult['outcome']): void {
    this.over = true;
    this.unregister?.();
    this.unregister = undefined;
    this.signal.removeEventListener('abort', this.gone);
    this.res.off('drain', this.drained);
    this.resolve({ wrote: this.wrote, outcome });
  }
}

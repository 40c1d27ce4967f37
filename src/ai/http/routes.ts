/**
 * The gateway's routes as a Fastify plugin (docs/ai-gateway.md#endpoints): each `POST` endpoint (chat
 * completions, embeddings) through one pipeline that reads the request with the endpoint's adapter, lets the
 * gateway find the answer (a direct `<provider>/<model>` step or a `dynamic/<route>` flow), writes it, and
 * logs one line; `GET /v1/models`; and a problem for any other path under `/v1`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  BreakwaterError,
  hostGraceEnd,
  hostRequestSignal,
  newId,
  type AtGraceEnd,
  type Clock,
  type Principal,
} from '../../core/index.js';
import { installErrorRenderer } from '../../http/index.js';
import { callerMetadata } from '../caller.js';
import type { AiEndpoint } from '../endpoints/endpoint.js';
import type { OpenAiModel } from '../endpoints/catalog.js';
import { readOverrides } from '../request-headers.js';
import type { AiRequest, AiRequestLog, Metadata, StepAnswer, StepOutcome } from '../types.js';
import { modelsRoutes } from './models.js';
import { AI_ERRORS, toAiError } from './problems.js';
import { answerHeaders, pipeStream, sendJson } from './respond.js';
import { unknownEndpointRoute } from './unknown.js';

/** What the routes need from the gateway. */
export interface AiRoutesHandler {
  /** The `POST` endpoints served. */
  readonly endpoints: readonly AiEndpoint[];
  readonly clock: Clock;
  readonly bodyLimitBytes: number;
  /** The route's own request timeout on a Breakwater server (`config.requestTimeoutMs`), ms. */
  readonly answerTimeoutMs: number;
  /** Finds the answer: the step that served (a flow sets `request.route` to `<name>@<version>`). */
  answer(request: AiRequest, model: string): Promise<StepAnswer>;
  /** Receives the line of every request. */
  log(line: AiRequestLog): void;
  /** The models the caller may use (see `visibleModels`). */
  listModels(principal: Principal | undefined, metadata: Metadata): Promise<OpenAiModel[]>;
}

/**
 * Mounts the routes in their own encapsulated plugin, whose errors the edge's one handler answers with the
 * gateway's renderer ({@link AI_ERRORS}: problem+json with the OpenAI-shaped `error` member), on a Breakwater
 * server and on any other Fastify app alike. Who may call them: whoever the host admits to `/v1/*` (on a
 * Breakwater server, a credential with the `ai` scope; a stranger gets the edge's 401 on every one of them,
 * the unknown paths included).
 */
export async function aiGatewayRoutes(app: FastifyInstance, handler: AiRoutesHandler): Promise<void> {
  await app.register(async (child) => {
    installErrorRenderer(child, AI_ERRORS);
    // On a Breakwater server, the signal it keeps per request (its request timeout, the client leaving);
    // on another Fastify app, one of the route's own.
    const signalOf = hostRequestSignal(child) ?? ownSignal;
    // On a Breakwater server, how a stream is cut when a graceful close runs out of grace.
    const atGraceEnd = hostGraceEnd(child);
    for (const endpoint of handler.endpoints) {
      child.post(
        endpoint.path,
        // config.requestTimeoutMs: read by createServer's request timeout (server/request-timeout.ts).
        { bodyLimit: handler.bodyLimitBytes, config: { requestTimeoutMs: handler.answerTimeoutMs } },
        (request, reply) => serve(handler, endpoint, request, reply, signalOf(request, reply), atGraceEnd),
      );
    }
    modelsRoutes(child, handler.listModels);
    unknownEndpointRoute(child, handler.endpoints);
  });
}

/**
 * A signal of the route's own, for an app that is not a Breakwater server: aborts when the client goes away
 * before its answer was finished. (That app's own handler timeout, if any, is not followed: the provider
 * call then ends at its first-byte timeout; a Breakwater server's request timeout aborts it at once.) A
 * response queued behind another pipelined one has no connection yet and emits no 'close' when the client
 * leaves, so for it the connection is listened to as well.
 */
function ownSignal(request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const left = new AbortController();
  const res = reply.raw;
  const socket = res.socket === null ? request.raw.socket : null;
  const onClose = (): void => {
    socket?.off('close', onClose);
    res.off('close', onClose);
    if (!res.writableFinished)
      left.abort(new BreakwaterError('canceled', { message: 'The client went away.' }));
  };
  res.once('close', onClose);
  socket?.once('close', onClose);
  return left.signal;
}

async function serve(
  handler: AiRoutesHandler,
  endpoint: AiEndpoint,
  request: FastifyRequest,
  reply: FastifyReply,
  signal: AbortSignal,
  atGraceEnd: AtGraceEnd | undefined,
): Promise<unknown> {
  const clock = handler.clock;
  const receivedAt = clock.now();
  const id = newId();
  let stream = false;
  let aiRequest: AiRequest | undefined;
  let answer: StepAnswer;
  try {
    // The edge sets it on a Breakwater server; an app without the edge has none (served as `local`).
    const principal = (request.principal as Principal | null | undefined) ?? undefined;
    const metadata = callerMetadata(principal, request.headers['x-breakwater-metadata']);
    const info = endpoint.read(request.body);
    stream = info.stream;
    const overrides = readOverrides(request.headers);
    aiRequest = {
      id,
      endpoint,
      body: request.body as Record<string, unknown>,
      stream,
      includeUsage: info.includeUsage,
      metadata,
      principal,
      overrides,
      signal,
      receivedAt,
      route: null,
    };
    answer = await handler.answer(aiRequest, info.model);
  } catch (caught) {
    // The error the edge answers (AI_ERRORS reads `caught` the same way), for the request's line.
    const error = toAiError(caught);
    handler.log(failureLine(id, endpoint, aiRequest?.route ?? null, stream, error, receivedAt, clock.now()));
    if (reply.sent || reply.raw.headersSent) {
      // The host's request timeout answered already (createServer's requestTimeoutMs): nothing more reaches
      // the client, but a fault of ours (a bug, a stack overflow) still belongs in the log.
      if (error.code === 'internal_error') request.log.error({ err: caught }, 'request failed');
      return reply;
    }
    // Thrown on to the edge's handler: it logs (5xx with `caught` and its stack), sets the status and
    // Retry-After, and writes the problem with the gateway's headers.
    void reply.header('x-request-id', id);
    throw caught;
  }
  const route = aiRequest.route;

  const headers = answerHeaders(answer, id, route);
  if (reply.sent || reply.raw.headersSent) {
    // Answered already by the host's handler timeout: nothing reaches the client, stop reading the provider.
    if (answer.kind === 'stream') answer.cancel();
    return reply;
  }
  if (answer.kind === 'json') {
    sendJson(reply, answer, headers);
    handler.log(
      answerLine(id, endpoint, route, answer, answer.outcome, 200, receivedAt, clock.now(), clock.now()),
    );
    return reply;
  }
  const firstByteAt = clock.now();
  const piped = await pipeStream(reply, answer, headers, signal, atGraceEnd);
  const outcome = await answer.done;
  handler.log(
    answerLine(
      id,
      endpoint,
      route,
      answer,
      { ...outcome, outcome: piped.outcome },
      200,
      receivedAt,
      firstByteAt,
      clock.now(),
    ),
  );
  return undefined;
}

function answerLine(
  id: string,
  endpoint: AiEndpoint,
  route: string | null,
  answer: StepAnswer,
  outcome: StepOutcome,
  status: number,
  receivedAt: number,
  firstByteAt: number,
  endedAt: number,
): AiRequestLog {
  return {
    request_id: id,
    endpoint: endpoint.name,
    route,
    step: answer.step.name,
    provider: answer.step.provider,
    model: answer.step.model,
    stream: answer.kind === 'stream',
    status,
    outcome: outcome.outcome,
    prompt_tokens: outcome.usage?.promptTokens ?? null,
    completion_tokens: outcome.usage?.completionTokens ?? null,
    cached_tokens: outcome.usage?.cachedTokens ?? null,
    cost_usd: outcome.costUsd ?? null,
    latency_ms: endedAt - receivedAt,
    first_byte_ms: firstByteAt - receivedAt,
    attempts: answer.attempts + answer.failedAttempts,
    failed_steps: answer.failures.map((f) => `${f.step}:${f.code}`),
  };
}

function failureLine(
  id: string,
  endpoint: AiEndpoint,
  route: string | null,
  stream: boolean,
  error: BreakwaterError,
  receivedAt: number,
  endedAt: number,
): AiRequestLog {
  const d = error.details ?? {};
  const text = (key: string): string | null => (typeof d[key] === 'string' ? (d[key] as string) : null);
  return {
    request_id: id,
    endpoint: endpoint.name,
    route: route ?? text('route'),
    step: text('step'),
    provider: text('provider'),
    model: text('model'),
    stream,
    status: error.status,
    // The precise reason a client reads as the OpenAI-style `error.code` (`unknown_provider`,
    // `invalid_header`), else the stable code (`rate_limited`): a fixed, low-cardinality set either way.
    outcome: typeof d.reason === 'string' && /^[a-z_]{1,40}$/.test(d.reason) ? d.reason : error.code,
    prompt_tokens: null,
    completion_tokens: null,
    cached_tokens: null,
    cost_usd: null,
    latency_ms: endedAt - receivedAt,
    first_byte_ms: null,
    attempts: typeof d.attempts === 'number' ? d.attempts : 0,
    failed_steps: Array.isArray(d.failed_steps) ? (d.failed_steps as string[]) : [],
  };
}

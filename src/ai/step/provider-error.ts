/**
 * Provider failures: the error one attempt throws (read by `classify` for retries) and the BreakwaterError the
 * client gets once a step gives up. A provider's own text reaches the client only for request errors (400,
 * 404, 413, 422: they say what to fix), scrubbed of the API key; a 401/403 means the GATEWAY's credentials were
 * refused, so the client learns that and nothing more.
 */
import { BreakwaterError, isBreakwaterError, isRequestTimeout, toBreakwaterError } from '../../core/index.js';
import { scrubSecret, type Provider } from '../providers.js';

type RawHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** A non-2xx answer of a provider. `status` and `headers` are what `classify` reads (incl. `Retry-After`). */
export class ProviderHttpError extends Error {
  override readonly name = 'ProviderHttpError';

  constructor(
    readonly status: number,
    readonly headers: RawHeaders,
    /** The provider's `error` object (OpenAI shape) when its body had one. */
    readonly providerError: Readonly<Record<string, unknown>> | undefined,
  ) {
    super(`provider answered ${status}`);
  }
}

/** Bytes of an error answer read to find the provider's message. */
export const ERROR_BODY_LIMIT = 64 * 1024;

/** The OpenAI-shaped `error` object of an error body, if it has one. */
export function errorObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    const error = parsed?.error;
    if (typeof error === 'object' && error !== null) return error as Record<string, unknown>;
    if (typeof error === 'string') return { message: error };
  } catch {
    // not JSON: the provider's text is not passed on
  }
  return undefined;
}

/** A 2xx answer over the gateway's `maxResponseBytes`: `upstream_error` with `reason: 'response_too_large'`. */
export function responseTooLarge(provider: Provider, maxBytes: number): BreakwaterError {
  return new BreakwaterError('upstream_error', {
    message: `The provider ${provider.name} sent an answer larger than ${maxBytes} bytes.`,
    source: provider.name,
    details: { provider: provider.name, reason: 'response_too_large' },
  });
}

/** Most characters of a provider's message passed on. */
const MAX_MESSAGE = 500;

/** The first-byte timeout of one attempt (`timeout`, with `details.timeout_ms` so classify knows it fired in flight). */
export function firstByteTimeout(provider: string, timeoutMs: number): BreakwaterError {
  return new BreakwaterError('timeout', {
    message: `The provider ${provider} did not start answering within ${timeoutMs} ms.`,
    source: provider,
    details: { timeout_ms: timeoutMs, reason: 'first_byte_timeout' },
  });
}

/**
 * What the client is told when a step gave up on `provider` with `error`:
 * - a BreakwaterError (a first-byte timeout, our own limits): as it is;
 * - a provider 408/425/429/5xx: `upstream_unavailable` (503) with the provider's retry hint;
 * - a provider 401/403: `upstream_error` (502), "the provider refused the gateway's credentials";
 * - another provider 4xx: `upstream_error` with the provider's status and message (scrubbed);
 * - a network failure: `upstream_unavailable` (503), `timeout` for a socket timeout; a client abort: `canceled`;
 * - the host server's request timeout (Fastify's `FST_ERR_HANDLER_TIMEOUT`, the request signal's reason): `timeout`.
 * `details.provider` names the provider; `details.provider_status` its status when it answered.
 */
export function providerFailure(error: unknown, provider: Provider): BreakwaterError {
  if (isBreakwaterError(error)) return error;
  const name = provider.name;
  if (isRequestTimeout(error)) {
    // The request's signal, aborted by the host server's request timeout (it has answered the client).
    return new BreakwaterError('timeout', {
      message: "The server's request timeout answered before the provider did.",
      source: name,
      details: { provider: name },
    });
  }
  if (error instanceof ProviderHttpError) {
    const status = error.status;
    const details = { provider: name, provider_status: status };
    const transient = status === 408 || status === 425 || status === 429 || status >= 500;
    if (transient) {
      const c = toBreakwaterError(error, { method: 'POST', idempotent: true });
      return new BreakwaterError('upstream_unavailable', {
        message: `The provider ${name} is unavailable right now (HTTP ${status}); try again shortly.`,
        source: name,
        retryAfterMs: c.retryAfterMs,
        details,
      });
    }
    if (status === 401 || status === 403) {
      return new BreakwaterError('upstream_error', {
        message: `The provider ${name} refused the gateway's credentials (HTTP ${status}).`,
        source: name,
        details,
      });
    }
    const pe = error.providerError;
    const text = typeof pe?.message === 'string' ? scrubSecret(pe.message, provider.secret) : undefined;
    return new BreakwaterError('upstream_error', {
      status: status >= 400 && status < 500 ? status : 502,
      message:
        text === undefined
          ? `The provider ${name} rejected the request (HTTP ${status}).`
          : `The provider ${name} rejected the request: ${text.slice(0, MAX_MESSAGE)}`,
      source: name,
      details: {
        ...details,
        ...(typeof pe?.type === 'string' ? { provider_type: pe.type } : {}),
        ...(typeof pe?.code === 'string' ? { provider_code: pe.code } : {}),
        ...(typeof pe?.param === 'string' ? { provider_param: pe.param } : {}),
      },
    });
  }
  const c = toBreakwaterError(error, { method: 'POST', idempotent: true, source: name });
  if (c.code === 'canceled') return new BreakwaterError('canceled', { source: name });
  const timeout = c.code === 'timeout';
  return new BreakwaterError(timeout ? 'timeout' : 'upstream_unavailable', {
    message: timeout
      ? `The provider ${name} did not answer in time.`
      : `The provider ${name} could not be reached; try again shortly.`,
    source: name,
    retryAfterMs: c.retryAfterMs,
    details: { provider: name, reason: c.details?.reason ?? 'network' },
  });
}

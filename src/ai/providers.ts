/**
 * Providers: OpenAI-compatible base URLs, each with one undici Pool (keep-alive connections reused across
 * requests) and its API key read from the environment once, at startup. A key lives only in the headers this
 * module builds: it is never logged and never part of an error.
 */
import { Pool, type Dispatcher } from 'undici';
import { OptionsError, type OptionProblem } from '../core/index.js';
import { ConnectionSlots } from './connection-slots.js';

/** A provider as configured. */
export interface ProviderConfig {
  /** The OpenAI-compatible base URL, up to and including the version (`https://api.openai.com/v1`). */
  baseUrl: string;
  /** The environment variable holding the API key, sent as `Authorization: Bearer <key>`. */
  apiKeyEnv?: string;
  /** Extra headers sent on every request (`OpenAI-Organization`, …). */
  headers?: Readonly<Record<string, string>>;
  /**
   * Connections to this provider at most, 1–10 000 (default unlimited): a bulkhead for a provider that serves
   * only so many requests at once (a self-hosted model server). Calls beyond it wait in arrival order, and
   * the wait counts toward the step's first-byte timeout; a call whose client leaves while it waits costs
   * nothing (see connection-slots.ts).
   */
  maxConnections?: number;
}

/** A provider ready to be called. */
export interface Provider {
  readonly name: string;
  /** `scheme://host:port` of the base URL. */
  readonly origin: string;
  /** The base URL's path without a trailing slash (`/v1`): an endpoint's provider path is appended to it. */
  readonly basePath: string;
  /** The path of `/chat/completions` under the base URL. */
  readonly completionsPath: string;
  /** Headers of every call (the key included); never log them. */
  readonly headers: Readonly<Record<string, string>>;
  readonly dispatcher: Dispatcher;
  /** With `maxConnections`: the calls waiting for one of them (see connection-slots.ts). */
  readonly slots?: ConnectionSlots | undefined;
  /** The API key, only so that error texts can be scrubbed of it; empty when none. */
  readonly secret: string;
}

/** Options of the registry's connection pools. */
export interface ProviderPoolOptions {
  /** Keep-alive of an idle connection, ms (undici default 4 000). */
  keepAliveTimeoutMs?: number;
  /** Connections per provider when its config has no `maxConnections` (default unlimited). */
  connections?: number;
}

/**
 * What is wrong with shape-checked provider configs, every provider at once: a `baseUrl` that is not an
 * http(s) URL without query or fragment (`providers.<name>.baseUrl`), an `apiKeyEnv` that names a variable
 * unset or empty in `env` (`providers.<name>.apiKeyEnv`; the problem holds the name, never a value; not
 * looked up without `env`).
 */
export function providerProblems(
  configs: Readonly<Record<string, ProviderConfig>>,
  env: Readonly<Record<string, string | undefined>> | undefined,
): OptionProblem[] {
  const problems: OptionProblem[] = [];
  for (const [name, config] of Object.entries(configs)) {
    let url: URL | undefined;
    try {
      url = new URL(config.baseUrl);
    } catch {
      url = undefined;
    }
    if (
      url === undefined ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.search !== '' ||
      url.hash !== ''
    ) {
      problems.push({
        option: `providers.${name}.baseUrl`,
        rule: 'an http(s) URL without query or fragment',
        value: config.baseUrl,
      });
    }
    if (env !== undefined && config.apiKeyEnv !== undefined && (env[config.apiKeyEnv] ?? '') === '') {
      problems.push({
        option: `providers.${name}.apiKeyEnv`,
        rule: 'the name of an environment variable that is set',
        value: config.apiKeyEnv,
      });
    }
  }
  return problems;
}

/** Providers by name. */
export class ProviderRegistry {
  private readonly providers = new Map<string, Provider>();

  /**
   * @param configs already shape-checked.
   * @param env where keys are read (default `process.env`).
   * @throws OptionsError (`RangeError`, `invalid_options`, owner `createAiGateway`) listing every
   *   {@link providerProblems} (the message names a variable, never its value).
   */
  constructor(
    configs: Readonly<Record<string, ProviderConfig>>,
    env: Readonly<Record<string, string | undefined>> = process.env,
    pool: ProviderPoolOptions = {},
  ) {
    const problems = providerProblems(configs, env);
    if (problems.length > 0) throw new OptionsError('createAiGateway', problems);
    for (const [name, config] of Object.entries(configs)) {
      const url = new URL(config.baseUrl);
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(config.headers ?? {})) headers[key.toLowerCase()] = value;
      headers['content-type'] = 'application/json';
      let secret = '';
      if (config.apiKeyEnv !== undefined) {
        secret = env[config.apiKeyEnv] ?? '';
        headers['authorization'] = `Bearer ${secret}`;
      }
      const basePath = url.pathname.replace(/\/+$/, '');
      const connections = config.maxConnections ?? pool.connections;
      this.providers.set(name, {
        name,
        origin: url.origin,
        basePath,
        completionsPath: `${basePath}/chat/completions`,
        headers,
        secret,
        dispatcher: new Pool(url.origin, {
          keepAliveTimeout: pool.keepAliveTimeoutMs ?? 4_000,
          ...(connections === undefined ? {} : { connections }),
        }),
        slots: connections === undefined ? undefined : new ConnectionSlots(connections),
      });
    }
  }

  /** The provider of that name, or undefined. */
  get(name: string): Provider | undefined {
    return this.providers.get(name);
  }

  /** The configured names. */
  names(): string[] {
    return [...this.providers.keys()];
  }

  /** Closes every pool (in-flight requests finish first). */
  async close(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.dispatcher.close()));
  }
}

/** `text` with every occurrence of `secret` replaced (a provider's error message may echo the key). */
export function scrubSecret(text: string, secret: string): string {
  return secret === '' ? text : text.split(secret).join('[redacted]');
}

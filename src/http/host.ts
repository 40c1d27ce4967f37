/**
 * `Host` and `Origin` validation: the DNS-rebinding defence every route gets (the MCP specification,
 * 2025-11-25, "Transports", Security Warning: servers MUST validate `Origin`; a foreign `Host` or `Origin`
 * gets 403 on every route: docs/architecture.md#identity-and-ownership).
 *
 * A rebinding page reaches the gateway under the attacker's own name (`evil.example` resolving to 127.0.0.1),
 * so its requests carry that name in `Host` and its origin in `Origin`. The rules:
 * - `Host` must be an IP literal (no name, so nothing to rebind), `localhost` or a `*.localhost` name, or a name
 *   the operator configured (the public URL's host, `allowedHosts`); the port is not compared. It must parse
 *   as RFC 9110 `uri-host [ ":" port ]` whole: `[::1]evil.example` is not a host.
 * - `Origin`, when present, must be a loopback origin (a page on this machine), the request's own origin
 *   (same `Host`: a page the gateway served itself), or one of `allowedOrigins`. `Origin: null` (a sandboxed
 *   frame, a file) is foreign unless `null` is listed.
 */
import { isIP } from 'node:net';

/** The configured part of the rules, normalized once. */
export interface HostRules {
  /** Host names (lower case, no port) accepted besides IP literals and loopback names. */
  readonly hosts: ReadonlySet<string>;
  /** Origins (`scheme://host[:port]`, as `URL.origin` gives them, or `null`) accepted besides the rules. */
  readonly origins: ReadonlySet<string>;
}

/** Why a request was refused, for `details.reason`. */
export type HostRefusal = 'host_missing' | 'host_malformed' | 'host_not_allowed' | 'origin_not_allowed';

/**
 * Builds the rules from the public URL and the operator's lists.
 * @throws RangeError naming `allowedHosts` / `allowedOrigins` for an entry that is not a host name / origin.
 */
export function hostRules(
  publicUrl: string | undefined,
  allowedHosts: readonly string[] = [],
  allowedOrigins: readonly string[] = [],
): HostRules {
  const hosts = new Set<string>();
  if (publicUrl !== undefined) hosts.add(new URL(publicUrl).hostname.toLowerCase());
  for (const entry of allowedHosts) {
    const parsed = parseHost(entry);
    if (parsed === undefined) {
      throw new RangeError(`allowedHosts: ${JSON.stringify(entry)} is not a host name (name[:port])`);
    }
    hosts.add(parsed.name);
  }
  const origins = new Set<string>();
  for (const entry of allowedOrigins) {
    if (entry === 'null') {
      origins.add('null');
      continue;
    }
    let origin: string;
    try {
      origin = new URL(entry).origin;
    } catch {
      origin = 'null';
    }
    if (origin === 'null' || origin !== entry.replace(/\/+$/, '').toLowerCase()) {
      throw new RangeError(
        `allowedOrigins: ${JSON.stringify(entry)} is not an origin (scheme://host[:port], no path)`,
      );
    }
    origins.add(origin);
  }
  return { hosts, origins };
}

const NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/;

/**
 * A `Host` value's name (lower case, IPv6 in brackets) and port, or undefined when it is not
 * `uri-host [ ":" port ]` as a whole.
 */
export function parseHost(value: string): { name: string; port: number | undefined } | undefined {
  const lower = value.trim().toLowerCase();
  let name: string;
  let rest: string;
  if (lower.startsWith('[')) {
    const close = lower.indexOf(']');
    if (close < 0) return undefined;
    name = lower.slice(0, close + 1);
    if (isIP(name.slice(1, -1)) !== 6) return undefined;
    rest = lower.slice(close + 1);
  } else {
    const colon = lower.indexOf(':');
    name = colon < 0 ? lower : lower.slice(0, colon);
    rest = colon < 0 ? '' : lower.slice(colon);
    if (isIP(name) !== 4 && !NAME.test(name)) return undefined;
  }
  if (rest === '') return { name, port: undefined };
  if (!/^:\d{1,5}$/.test(rest)) return undefined;
  const port = Number(rest.slice(1));
  return port <= 65_535 ? { name, port } : undefined;
}

/** True for a host name that is this machine: `localhost`, `*.localhost`, `127.x.x.x`, `[::1]`. */
export function isLoopbackName(name: string): boolean {
  return (
    name === 'localhost' ||
    name.endsWith('.localhost') ||
    name === '[::1]' ||
    (isIP(name) === 4 && name.startsWith('127.'))
  );
}

/** True for a host name with nothing to rebind: an IP literal or a loopback name. */
function isLiteralOrLoopback(name: string): boolean {
  return isIP(name) === 4 || name.startsWith('[') || isLoopbackName(name);
}

/**
 * Checks one request's `Host` and `Origin` (see the module doc). Returns undefined when they pass, else why
 * not.
 */
export function checkHostAndOrigin(
  rules: HostRules,
  host: string | undefined,
  origin: string | undefined,
): HostRefusal | undefined {
  if (host === undefined || host === '') return 'host_missing';
  const parsed = parseHost(host);
  if (parsed === undefined) return 'host_malformed';
  if (!isLiteralOrLoopback(parsed.name) && !rules.hosts.has(parsed.name)) return 'host_not_allowed';
  if (origin === undefined || origin === '') return undefined;
  if (rules.origins.has(origin)) return undefined;
  if (origin === 'null') return 'origin_not_allowed';
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return 'origin_not_allowed';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'origin_not_allowed';
  const from = url.hostname.toLowerCase();
  if (isLoopbackName(from)) return undefined;
  // Same origin: the page came from this gateway under the name the request itself was sent to.
  const defaultPort = url.protocol === 'https:' ? 443 : 80;
  const originPort = url.port === '' ? defaultPort : Number(url.port);
  if (from === parsed.name && originPort === (parsed.port ?? defaultPort)) return undefined;
  if (rules.origins.has(url.origin)) return undefined;
  return 'origin_not_allowed';
}

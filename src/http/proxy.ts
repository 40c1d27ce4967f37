/**
 * The trusted-proxy rule. Behind a TLS-terminating proxy every request arrives from the proxy's address, so
 * what the client's address and scheme were is only known from the proxy's headers, and only a proxy the
 * operator named may be believed (Fastify's `trustProxy`, through `proxy-addr`: `request.ip` is then the
 * last address in `X-Forwarded-For` that is not a trusted proxy, and `request.protocol` comes from
 * `X-Forwarded-Proto`). Any other sender's forwarding headers are ignored for addresses and scheme, and mark
 * the request as proxied: a proxy on this machine makes every client look local, so a proxied request is
 * never the loopback principal, whichever header it used (`X-Real-IP` alone, nginx's usual one, included).
 */
import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';

/** Headers by which a proxy says where a request came from; any of them means "this came through a proxy". */
export const FORWARDING_HEADERS = [
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-cluster-client-ip',
  'via',
] as const;

/**
 * Validates the operator's trusted proxies: IPv4/IPv6 addresses or CIDR ranges (`10.0.0.0/8`, `::1`), the
 * form Fastify's `trustProxy` takes.
 * @throws RangeError naming `trustedProxies` and the entry for anything else.
 */
export function trustedProxyList(entries: readonly string[]): string[] {
  return entries.map((raw) => {
    const entry = raw.trim();
    const [address = '', bits, extra] = entry.split('/');
    const family = isIP(address);
    const prefix = bits === undefined ? undefined : Number(bits);
    const max = family === 6 ? 128 : 32;
    if (
      family === 0 ||
      extra !== undefined ||
      (prefix !== undefined && (!/^\d{1,3}$/.test(bits!) || prefix > max))
    ) {
      throw new RangeError(
        `trustedProxies: ${JSON.stringify(raw)} is not an IP address or CIDR range (e.g. 10.0.0.0/8, ::1)`,
      );
    }
    return entry;
  });
}

/** True when the request carries any {@link FORWARDING_HEADERS} header. */
export function isForwarded(request: FastifyRequest): boolean {
  const headers = request.headers;
  for (const name of FORWARDING_HEADERS) if (headers[name] !== undefined) return true;
  return false;
}

/** True for an IPv4 or IPv6 loopback address (IPv4-mapped too). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/**
 * True when the request came straight from a process on this machine: the socket's peer is a loopback
 * address and no proxy header is present (see the module doc).
 */
export function isLocalClient(request: FastifyRequest): boolean {
  return isLoopbackAddress(request.socket.remoteAddress) && !isForwarded(request);
}

/**
 * True when the client reached us over TLS: the socket is encrypted, or a trusted proxy said
 * `X-Forwarded-Proto: https` (Fastify's `request.protocol` with `trustProxy`).
 */
export function viaTls(request: FastifyRequest): boolean {
  return request.protocol === 'https';
}

/** Where the gateway listens: a free port chosen up front, and the host as a URL shows it. */
import { createServer as createNetServer } from 'node:net';

/** A port free on `host` now (the OS picks it; it is released at once for the gateway to take). */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen({ host, port: 0 }, () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** A host as it goes in a URL: IPv6 literals in brackets, the wildcard addresses as loopback. */
export function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

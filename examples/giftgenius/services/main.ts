/**
 * Runs the three GiftGenius services on fixed loopback ports until SIGINT or SIGTERM:
 *
 *   node --import tsx examples/giftgenius/services/main.ts
 *
 * Environment: GIFT_PORT (8791), COMMERCE_PORT (8792), ANALYTICS_PORT (8793), GIFTGENIUS_HOST (127.0.0.1).
 * Exit codes: 0 after a clean stop, 1 when a service cannot start, 2 for a bad environment value.
 */
import { DEFAULT_PORTS, startGiftGeniusServices } from './index.js';
import type { GiftGeniusServices } from './index.js';

function portFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65_535) {
    console.error(`${name} must be a port number from 0 to 65535, not "${raw}".`);
    process.exit(2);
  }
  return port;
}

const ports = {
  gift: portFromEnv('GIFT_PORT', DEFAULT_PORTS.gift),
  commerce: portFromEnv('COMMERCE_PORT', DEFAULT_PORTS.commerce),
  analytics: portFromEnv('ANALYTICS_PORT', DEFAULT_PORTS.analytics),
};

let services: GiftGeniusServices;
try {
  services = await startGiftGeniusServices({ host: process.env.GIFTGENIUS_HOST || '127.0.0.1', ports });
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}

console.log(`gift      ${services.gift.url}`);
console.log(`commerce  ${services.commerce.url}`);
console.log(`analytics ${services.analytics.url}`);

const stop = async (): Promise<void> => {
  await services.close();
  process.exit(0);
};
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());

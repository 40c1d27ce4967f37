/** Several limit grants held by one step, as one (the caller's own rules, route layers, the gateway's). */
import type { LimitGrant } from './limits.js';

/**
 * One grant over several: every reservation settles with the same cost; the rate headers are those of the
 * grant with the fewest requests left; the estimate is the largest (each grant reserved the same estimate, or
 * none).
 */
export function combineGrants(grants: readonly LimitGrant[]): LimitGrant {
  if (grants.length === 1) return grants[0]!;
  let rateHeaders: Readonly<Record<string, string>> | undefined;
  let estimateMicroUsd = 0;
  for (const g of grants) {
    estimateMicroUsd = Math.max(estimateMicroUsd, g.estimateMicroUsd);
    if (g.rateHeaders === undefined) continue;
    const left = Number(g.rateHeaders['x-ratelimit-remaining']);
    if (rateHeaders === undefined || left < Number(rateHeaders['x-ratelimit-remaining']))
      rateHeaders = g.rateHeaders;
  }
  return {
    estimateMicroUsd,
    rateHeaders,
    settle: async (cost) => {
      await Promise.all(grants.map((g) => g.settle(cost)));
    },
  };
}

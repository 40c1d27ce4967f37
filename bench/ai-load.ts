/**
 * The AI bench's paced load (`--provider-ms` > 0): `connections` clients, each sending the next request
 * when its answer has been read, for `durationS` seconds, over one undici Pool. Besides each request's
 * latency it reads `x_sim_service_ms` from the answer (the simulated provider's own time for that request,
 * `reportServiceTime`), so it can also report the **overhead** of each request: its latency minus the
 * provider's own time. That is what lies between the client and the provider (the network, the load
 * generator, a gateway) without the provider's simulated wait (150 ms ± jitter) or its pauses, which are
 * most of a latency's spread. A gateway's added latency is then its overhead minus the direct overhead,
 * per percentile, as an Envoy's upstream and downstream timings would give it.
 */
import { Pool } from 'undici';

/** What one case measured. */
export interface PacedResult {
  /** 2xx answers per second. */
  perSec: number;
  /** Latency percentiles in ms, from sending the request to the answer's last byte. */
  p50: number;
  p99: number;
  /** Overhead percentiles in ms (latency minus the provider's own time); undefined when no answer had it. */
  overheadP50: number | undefined;
  overheadP99: number | undefined;
  /** Non-2xx answers and errors. */
  failed: number;
}

const SERVICE = /"x_sim_service_ms":([0-9.eE+-]+)/;

/** The `p` percentile (0..1) of sorted `values`, nearest rank. */
function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/**
 * Sends `body` to `url` from `connections` clients for `warmUpS` then `durationS` seconds, on the same
 * connections: what is measured is only the requests sent after the warm-up, so no connection's opening is
 * in it (200 connections opened at once cost their first requests ~100 ms each here, 4 % of a 10 s run).
 * `measuring` is called when the warm-up ends.
 */
export async function pacedLoad(
  url: string,
  body: string,
  headers: Record<string, string>,
  connections: number,
  warmUpS: number,
  durationS: number,
  measuring: () => void,
): Promise<PacedResult> {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  const latencies: number[] = [];
  const overheads: number[] = [];
  let failed = 0;
  const began = performance.now() + warmUpS * 1000;
  const end = began + durationS * 1000;
  const warm = setTimeout(measuring, warmUpS * 1000);
  const client = async (): Promise<void> => {
    while (performance.now() < end) {
      const sent = performance.now();
      const measured = sent >= began;
      try {
        const answer = await pool.request({ path: target.pathname, method: 'POST', headers, body });
        const text = await answer.body.text();
        const latency = performance.now() - sent;
        if (!measured) continue;
        if (answer.statusCode < 200 || answer.statusCode > 299) {
          failed++;
          continue;
        }
        latencies.push(latency);
        const service = SERVICE.exec(text);
        if (service !== null) overheads.push(latency - Number(service[1]));
      } catch {
        if (measured) failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, client));
  clearTimeout(warm);
  const elapsedS = (performance.now() - began) / 1000;
  await pool.close();
  const sortedLatency = Float64Array.from(latencies).sort();
  const sortedOverhead = Float64Array.from(overheads).sort();
  const some = sortedOverhead.length > 0;
  return {
    perSec: latencies.length / elapsedS,
    p50: percentile(sortedLatency, 0.5),
    p99: percentile(sortedLatency, 0.99),
    overheadP50: some ? percentile(sortedOverhead, 0.5) : undefined,
    overheadP99: some ? percentile(sortedOverhead, 0.99) : undefined,
    failed,
  };
}

/**
 * `npm run bench -- <suite>`: benchmarks against peers, never part of `npm test`.
 * Suites: policies, jobs, jobs-scale, webhooks, mcp, ai, metric-labels, import; soak (not run by default).
 */
const suites: Record<string, () => Promise<unknown>> = {
  policies: () => import('./policies.js'),
  jobs: () => import('./jobs.js'),
  'jobs-scale': () => import('./jobs-scale.js'),
  webhooks: () => import('./webhooks.js'),
  mcp: () => import('./mcp.js'),
  ai: () => import('./ai.js'),
  'metric-labels': () => import('./metric-labels.js'),
  import: () => import('./import.js'),
  soak: () => import('./soak.js'),
};

const requested = process.argv.slice(2).filter((a) => !a.startsWith('-'));
// The soak runs for a minute or more on purpose: only when asked for.
const names = requested.length > 0 ? requested : Object.keys(suites).filter((name) => name !== 'soak');
for (const name of names) {
  const load = suites[name];
  if (load === undefined) {
    console.error(`unknown bench suite '${name}'; known: ${Object.keys(suites).join(', ')}`);
    process.exit(2);
  }
  const mod = (await load()) as { main: () => Promise<void> };
  await mod.main();
}

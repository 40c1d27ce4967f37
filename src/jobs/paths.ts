/**
 * Where a job lives over HTTP: `/jobs/<id>` (polling) and `/jobs/<id>/events` (SSE), the id percent-encoded.
 * server/ serves these routes and mcp/ links to them, so the layout is written once, here.
 */
export function jobPaths(id: string): { status: string; events: string } {
  const status = `/jobs/${encodeURIComponent(id)}`;
  return { status, events: `${status}/events` };
}

/* global document, fetch, location, setTimeout -- browser globals: this file runs in the page, not in Node */
// The Breakwater dashboard: polls GET /admin/api/overview every second and /admin/api/series every two,
// follows running jobs over SSE (GET /jobs/:id/events), and sends the admin actions. Plain browser
// JavaScript: no framework, no build step.
import { lineChart } from './charts.js';
import { mergeJobs } from './jobs.js';
import { $, ago, badge, duration, empty, esc, meter, setServerTime, sync, usd } from './render.js';

const OVERVIEW_EVERY_MS = 1000;
const SERIES_EVERY_MS = 2000;

/** JSON from the admin API; a 401 sends the browser to the login form. */
async function api(path, options = {}) {
  const method = options.method ?? 'GET';
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: { accept: 'application/json', ...(method === 'GET' ? {} : { 'x-breakwater-admin': '1' }) },
  });
  if (response.status === 401) {
    location.assign('/admin/login');
    throw new Error('Not signed in.');
  }
  const text = await response.text();
  const body = text === '' ? undefined : JSON.parse(text);
  if (!response.ok) throw new Error(body?.detail ?? `The gateway answered ${response.status}.`);
  return body;
}

function showError(message) {
  const banner = $('error');
  banner.textContent = message ?? '';
  banner.hidden = message === undefined;
}
// ---- sections --------------------------------------------------------------------------------------------

function renderBreakers(breakers) {
  sync(
    $('breakers'),
    breakers,
    (b) => b.name,
    (b) => {
      const last = b.last_transition;
      const retry =
        b.state === 'open' && b.retry_after_ms !== null
          ? ` <span class="muted">trial in ${duration(b.retry_after_ms)}</span>`
          : '';
      return {
        attrs: { 'data-breaker': b.name, 'data-state': b.state },
        html: `<td><strong>${esc(b.name)}</strong>${b.kind === 'webhook' ? ' <span class="muted">webhook handler</span>' : ''}</td>
        <td>${badge(b.state)}${retry}</td>
        <td>${last === null ? '<span class="muted">none yet</span>' : `${esc(last.from)} → ${esc(last.to)} <span class="muted">${esc(last.reason.replaceAll('_', ' '))}, ${ago(last.at)}</span>`}</td>
        <td class="actions">
          <button type="button" data-action="isolate" data-target="${esc(b.name)}" ${b.state === 'isolated' ? 'disabled' : ''}>Isolate</button>
          <button type="button" data-action="reset" data-target="${esc(b.name)}" ${b.state === 'closed' ? 'disabled' : ''}>Reset</button>
        </td>`,
      };
    },
  );
  empty('breakers', breakers.length === 0);
}

function renderBulkheads(bulkheads) {
  sync(
    $('bulkheads'),
    bulkheads,
    (b) => b.name,
    (b) => {
      const ratio = b.in_use / b.max_concurrent;
      return {
        attrs: { 'data-bulkhead': b.name },
        html: `<div class="meter-head"><strong>${esc(b.name)}</strong>
          <span>${b.in_use} / ${b.max_concurrent} in use · ${b.queued} / ${b.max_queue} queued</span></div>
        ${meter(ratio * 100, ratio >= 1 ? 'full' : ratio >= 0.8 ? 'warn' : '')}`,
      };
    },
    'div',
  );
  empty('bulkheads', bulkheads.length === 0);
}

function renderQueues(stats) {
  $('job-stats').innerHTML = [
    ['pending', stats.queue_depth],
    ['running', stats.counts.in_progress],
    ['waiting for input', stats.counts.input_required ?? 0],
    ['oldest waiting', duration(stats.oldest_pending_age_ms)],
    ['dead letters', stats.dead_letters],
  ]
    .map(([label, value]) => `<div><dt>${label}</dt><dd>${esc(value)}</dd></div>`)
    .join('');
  sync(
    $('queues'),
    stats.queues,
    (q) => q.type,
    (q) => ({
      attrs: { 'data-queue': q.type },
      html: `<td class="mono">${esc(q.type)}</td><td class="num">${q.pending}</td><td class="num">${q.in_progress}</td>`,
    }),
  );
  empty('queues', stats.queues.length === 0);
}

function renderDeadLetters(deadLetters) {
  sync(
    $('dead-letters'),
    deadLetters,
    (j) => j.id,
    (j) => ({
      attrs: { 'data-dead-letter': j.id },
      html: `<td class="mono">${esc(j.id)}</td><td class="mono">${esc(j.type)}</td>
      <td><strong>${esc(j.error?.code ?? '')}</strong> <span class="muted">${esc(j.error?.message ?? '')}</span></td>
      <td class="num">${j.attempts}/${j.max_attempts}</td>
      <td class="actions"><button type="button" data-action="retry" data-target="${esc(j.id)}">Retry</button></td>`,
    }),
  );
  empty('dead-letters', deadLetters.length === 0);
}

function renderOperations(operations) {
  sync(
    $('operations'),
    operations,
    (o) => o.id,
    (o) => ({
      attrs: { 'data-operation': o.id, 'data-state': o.state },
      html: `<td class="mono">${esc(o.id)}</td><td class="mono">${esc(o.action)}</td><td>${badge(o.state)}</td>
      <td>${esc(o.observation ?? '–')} <span class="muted">${ago(o.updated_at)}</span></td>
      <td>${new Date(o.recovery_deadline_at).toLocaleTimeString()}</td>
      <td class="actions"><button type="button" data-action="reconcile" data-target="${esc(o.id)}">Reconcile</button></td>`,
    }),
  );
  empty('operations', operations.length === 0);
}

function renderWebhooks(webhooks) {
  const sources = webhooks?.sources ?? [];
  sync(
    $('webhooks'),
    sources,
    (s) => s.name,
    (s) => ({
      attrs: { 'data-source': s.name },
      html: `<td>${esc(s.name)}</td><td class="num">${s.accepted}</td><td class="num">${s.duplicate}</td>
      <td class="num">${s.rejected}</td><td class="num">${s.backlog}</td>`,
    }),
  );
  empty('webhooks', sources.length === 0);
}

function renderSpend(spend) {
  const rows = (spend?.rules ?? []).flatMap((rule) =>
    rule.counters.map((counter) => ({ rule, counter, key: `${rule.name}/${counter.scope}` })),
  );
  sync(
    $('spend'),
    rows,
    (r) => r.key,
    ({ rule, counter }) => {
      const spent = (100 * counter.spent_usd) / rule.budget_usd;
      const used = 100 * counter.used_ratio;
      return {
        attrs: { 'data-spend-rule': rule.name },
        html: `<div class="meter-head"><strong>${esc(rule.name)} <span class="muted">${esc(counter.scope)}</span></strong>
          <span>${usd(counter.spent_usd)} of ${usd(rule.budget_usd)}${counter.reserved_usd > 0 ? ` · ${usd(counter.reserved_usd)} reserved` : ''}</span></div>
        <div class="bar ${used >= 100 ? 'full' : used >= 80 ? 'warn' : ''}" role="progressbar" aria-valuemin="0" aria-valuemax="100" aria-valuenow="${Math.round(used)}">
          <span class="reserved" style="width:${Math.min(100, used)}%"></span><span style="width:${Math.min(100, spent)}%"></span></div>
        <div class="note">window of ${duration(rule.window_ms)}, ends ${new Date(rule.window_end).toLocaleString()}${rule.complete ? '' : ' · per-value counters not listed'}</div>`,
      };
    },
    'div',
  );
  empty('spend', rows.length === 0);
}

/** Bytes as a person reads them: 1.2 MB. */
function bytes(n) {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

function renderStore(store) {
  const kinds = Object.keys(store?.rows ?? {});
  const removed = store?.last_prune?.removed ?? {};
  sync(
    $('store'),
    kinds,
    (kind) => kind,
    (kind) => ({
      attrs: { 'data-kind': kind },
      html: `<td>${esc(kind.replace(/_/g, ' '))}</td><td class="num">${store.rows[kind]}</td>
      <td class="num">${kind in removed ? `−${removed[kind]}` : '—'}</td>`,
    }),
  );
  $('store-hint').textContent =
    store === null
      ? 'Rows per kind and size on disk, measured after each prune.'
      : `${bytes(store.bytes)} on disk, measured ${ago(store.measured_at)}` +
        (store.last_prune === null ? '; no prune yet.' : `; last prune ${ago(store.last_prune.at)}.`);
  empty('store', kinds.length === 0);
}

function renderHeader(overview) {
  const open = overview.breakers.filter((b) => b.state !== 'closed');
  const attention = overview.operations.length;
  const parts = [
    open.length === 0 ? 'all breakers closed' : `${open.map((b) => `${b.name} ${b.state}`).join(', ')}`,
    `${overview.jobs.queue_depth} pending`,
    attention === 0 ? null : `${attention} operation${attention === 1 ? '' : 's'} need a look`,
    `updated ${new Date(overview.generated_at).toLocaleTimeString()}`,
  ];
  $('status').textContent = parts.filter(Boolean).join(' · ');
  const { mode, access } = overview.admin;
  $('admin-mode').textContent =
    mode === 'loopback'
      ? 'this machine only (no admin token)'
      : access === 'session'
        ? 'signed in'
        : 'bearer token';
  $('logout').hidden = access !== 'session';
}

// ---- polling -----------------------------------------------------------------------------------------

async function refreshOverview() {
  const overview = await api('/admin/api/overview');
  setServerTime(overview.generated_at);
  renderHeader(overview);
  renderBreakers(overview.breakers);
  renderBulkheads(overview.bulkheads);
  renderQueues(overview.jobs);
  mergeJobs(overview.jobs.recent);
  renderDeadLetters(overview.dead_letters);
  renderOperations(overview.operations);
  renderWebhooks(overview.webhooks);
  renderSpend(overview.spend);
  renderStore(overview.store);
  document.body.dataset.ready = 'true';
}

async function refreshSeries() {
  const series = await api('/admin/api/series');
  const perSecond = 1000 / series.interval_ms;
  const points = series.points;
  const spanS = Math.round((points.length * series.interval_ms) / 1000);
  const since = spanS < 60 ? `${spanS} s ago` : `${Math.round(spanS / 60)} min ago`;
  const rate = (pick) => points.map((p) => pick(p) * perSecond);
  lineChart(
    $('chart-throughput'),
    $('legend-throughput'),
    [
      { label: 'upstream calls', values: rate((p) => p.upstream_calls) },
      { label: 'webhooks', values: rate((p) => p.webhook_deliveries) },
      { label: 'AI requests', values: rate((p) => p.ai_requests) },
      { label: 'job runs', values: rate((p) => p.job_runs) },
    ],
    { since },
  );
  lineChart(
    $('chart-latency'),
    $('legend-latency'),
    [
      { label: 'p50', values: points.map((p) => p.latency_ms?.p50 ?? null) },
      { label: 'p95', values: points.map((p) => p.latency_ms?.p95 ?? null) },
    ],
    { since, unit: ' ms' },
  );
  const codes = Object.keys(points[0]?.rejections ?? {});
  const active = codes.filter((code) => points.some((p) => p.rejections[code] > 0));
  lineChart(
    $('chart-rejections'),
    $('legend-rejections'),
    (active.length > 0 ? active : ['circuit_open']).map((code) => ({
      label: code.replace('_', ' '),
      values: rate((p) => p.rejections[code] ?? 0),
    })),
    { since },
  );
}

function every(ms, task) {
  const run = async () => {
    try {
      await task();
      showError(undefined);
    } catch (error) {
      showError(`Cannot reach the gateway: ${error.message}`);
    }
    setTimeout(run, ms);
  };
  void run();
}

// ---- actions -----------------------------------------------------------------------------------------

const ACTIONS = {
  isolate: (name) => api(`/admin/api/breakers/${encodeURIComponent(name)}/isolate`, { method: 'POST' }),
  reset: (name) => api(`/admin/api/breakers/${encodeURIComponent(name)}/reset`, { method: 'POST' }),
  retry: (id) => api(`/admin/api/jobs/${encodeURIComponent(id)}/retry`, { method: 'POST' }),
  reconcile: (id) => api(`/admin/api/operations/${encodeURIComponent(id)}/reconcile`, { method: 'POST' }),
};

document.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-action]');
  if (button === null) return;
  const action = ACTIONS[button.dataset.action];
  button.disabled = true;
  try {
    const answer = await action(button.dataset.target);
    // A retried job shows up in the job list at once, and is followed.
    if (button.dataset.action === 'retry' && answer?.id) mergeJobs([answer]);
    showError(undefined);
  } catch (error) {
    showError(error.message);
  } finally {
    button.disabled = false;
    await refreshOverview().catch(() => undefined);
  }
});

$('logout').addEventListener('click', async () => {
  await fetch('/admin/logout', { method: 'POST', credentials: 'same-origin' });
  location.assign('/admin/login');
});

every(OVERVIEW_EVERY_MS, refreshOverview);
every(SERIES_EVERY_MS, refreshSeries);

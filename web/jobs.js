/* global EventSource -- browser globals: this file runs in the page, not in Node */
// The dashboard's job list: the newest jobs, each unfinished one followed over its event stream
// (GET /jobs/:id/events) so its progress bar, partial result and end show as they happen.
import { $, badge, empty, esc, meter, summarize, sync } from './render.js';

const JOBS_SHOWN = 12;
const TERMINAL = new Set(['completed', 'failed', 'canceled']);

/** Jobs shown, by id: the last view, plus what their event stream told since. */
const jobs = new Map();

function renderJobs() {
  const shown = [...jobs.values()].sort((a, b) => (a.id < b.id ? 1 : -1)).slice(0, JOBS_SHOWN);
  // Jobs that scrolled out stop being followed.
  for (const job of jobs.values()) {
    if (!shown.includes(job)) {
      job.source?.close();
      jobs.delete(job.id);
    }
  }
  sync(
    $('jobs'),
    shown,
    (j) => j.id,
    (j) => {
      const done = j.status === 'completed';
      const percent = done ? 100 : j.progress?.total > 0 ? (100 * j.progress.step) / j.progress.total : 0;
      const detail =
        j.status === 'failed' || (j.error !== null && j.status === 'pending')
          ? `${esc(j.error?.code ?? 'failed')}: ${esc(j.error?.message ?? '')}`
          : done
            ? esc(summarize(j.result))
            : [j.progress?.message, j.partial === undefined ? undefined : `partial: ${summarize(j.partial)}`]
                .filter(Boolean)
                .map(esc)
                .join(' · ');
      return {
        attrs: { 'data-job-id': j.id, 'data-status': j.status },
        html: `<div class="job-title"><span class="mono">${esc(j.type)}</span> ${badge(j.status)}
          <span class="muted mono">${esc(j.id)}</span></div>
        <div class="job-progress"><div class="label"><span>${j.progress ? `${j.progress.step}/${j.progress.total}` : ''}</span><span>${Math.round(percent)}%</span></div>
          ${meter(percent, done ? 'done' : j.status === 'failed' ? 'full' : '')}</div>
        <div class="job-detail">${detail || '&nbsp;'}</div>`,
      };
    },
    'li',
  );
  empty('jobs', shown.length === 0);
}

/**
 * Follows an unfinished job's events from `fromSeq`: progress, partial results and its end arrive as they
 * happen. A terminal event older than the job's current run (a run before a retry, replayed first) is history:
 * the stream ends there, so it is opened again after it.
 */
function follow(job, fromSeq = 0) {
  if (job.source !== undefined || TERMINAL.has(job.status)) return;
  const source = new EventSource(`/jobs/${encodeURIComponent(job.id)}/events?last_event_id=${fromSeq}`);
  job.source = source;
  const stop = () => {
    source.close();
    if (job.source === source) job.source = undefined;
  };
  // An event at or below `seenSeq` is already reflected in what the overview showed: replaying it would move
  // the bar backwards for a moment.
  const on = (type, apply) =>
    source.addEventListener(type, (message) => {
      const event = JSON.parse(message.data);
      const fresh = event.seq > job.seenSeq;
      apply(event.payload ?? {}, event, fresh);
      if (fresh) job.seenSeq = event.seq;
      renderJobs();
    });
  on('job.started', () => (job.status = 'in_progress'));
  on('job.progress', (p, _event, fresh) => {
    if (fresh) job.progress = p;
  });
  on('job.partial', (p) => (job.partial = 'data' in p ? p.data : p));
  // Waiting for a user's answer (no worker holds it); answered, it is pending again.
  on('job.input_required', () => (job.status = 'input_required'));
  on('job.input_received', () => (job.status = 'pending'));
  on('job.retrying', (p) => {
    job.status = 'pending';
    job.error = p.error ?? null;
  });
  for (const status of TERMINAL) {
    on(`job.${status}`, (p, event) => {
      stop();
      if (Date.parse(event.timestamp) < job.activeSince) return follow(job, event.seq);
      job.status = status;
      if (status === 'completed') job.result = p.result ?? null;
      if (status === 'failed') job.error = p.error ?? null;
    });
  }
  // The stream ends after the terminal event; a reconnect then gets 204 and the browser gives up.
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) stop();
  };
}

export function mergeJobs(views) {
  for (const view of views) {
    let job = jobs.get(view.id);
    if (job === undefined) {
      job = {
        ...view,
        progress: view.progress ?? undefined,
        partial: undefined,
        activeSince: 0,
        seenSeq: view.last_event_seq ?? 0,
      };
      jobs.set(view.id, job);
    } else {
      // Completed and canceled are final; a failed job may be retried (pending again).
      if (job.status !== 'completed' && job.status !== 'canceled') job.status = view.status;
      job.result = view.result ?? job.result;
      job.error = view.error;
      job.attempts = view.attempts;
      // The overview may be older than the stream: its progress counts only if it is as new.
      if (view.last_event_seq !== undefined && view.last_event_seq >= job.seenSeq) {
        if (view.progress) job.progress = view.progress;
        job.seenSeq = view.last_event_seq;
      }
    }
    if (!TERMINAL.has(view.status)) job.activeSince = Math.max(job.activeSince, Date.parse(view.updated_at));
    if (TERMINAL.has(job.status)) {
      job.source?.close();
      job.source = undefined;
    } else follow(job);
  }
  renderJobs();
}

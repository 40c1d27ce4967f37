/* global document -- browser globals: this file runs in the page, not in Node */
// Rendering helpers of the dashboard: escaping, times and sizes on the gateway's clock, badges and bars, and a
// keyed row renderer that keeps each row's element (and its buttons) while its content is unchanged.

/** Server time minus browser time, ms: "ago" is measured on the gateway's clock. */
let clockOffsetMs = 0;

/** Records the gateway's time of an answer (its `generated_at`). */
export function setServerTime(iso) {
  clockOffsetMs = Date.parse(iso) - Date.now();
}

export const $ = (id) => document.getElementById(id);

export function esc(value) {
  return String(value ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );
}

/** JSON from the admin API; a 401 sends the browser to the login form. */ // ---- time and numbers -------------------------------------------------------------------------------

export function ago(iso) {
  if (iso === null || iso === undefined) return '–';
  const s = Math.max(0, Math.round((Date.now() + clockOffsetMs - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function duration(ms) {
  if (ms === null || ms === undefined) return '–';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  const days = s / 86400;
  return Number.isInteger(days) ? `${days} d` : `${Math.floor(days)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export function usd(value) {
  return value >= 1 ? `$${value.toFixed(2)}` : `$${value.toFixed(4)}`;
}

export function badge(state) {
  return `<span class="badge state-${esc(state)}">${esc(state.replace('_', ' '))}</span>`;
}

export function meter(percent, classes = '') {
  const p = Math.max(0, Math.min(100, percent));
  return `<div class="bar ${classes}" role="progressbar" aria-valuemin="0" aria-valuemax="100" aria-valuenow="${Math.round(p)}"><span style="width:${p}%"></span></div>`;
}

/** A short sentence for a JSON value (a summary field, list sizes and names, or the JSON cut short). */
export function summarize(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && !Array.isArray(value)) {
    if (typeof value.summary === 'string') return value.summary;
    const lists = Object.entries(value).filter(([, v]) => Array.isArray(v));
    if (lists.length > 0) {
      return lists
        .map(([key, list]) => {
          const names = list
            .slice(0, 3)
            .map((item) => item?.name ?? item?.title ?? item?.id)
            .filter((name) => name !== undefined);
          return `${list.length} ${key}${names.length > 0 ? `: ${names.join('; ')}` : ''}`;
        })
        .join(' · ');
    }
  }
  const json = JSON.stringify(value);
  return json.length > 160 ? `${json.slice(0, 157)}…` : json;
}

// ---- keyed rendering: rows keep their element (and their buttons) while their content is unchanged -----

/** The HTML each row was last rendered with. */
const rendered = new WeakMap();

export function sync(container, items, key, render, tag = 'tr') {
  const old = new Map([...container.children].map((node) => [node.dataset.key, node]));
  let previous = null;
  for (const item of items) {
    const k = key(item);
    const { html, attrs = {} } = render(item);
    let node = old.get(k);
    old.delete(k);
    if (node === undefined) {
      node = document.createElement(tag);
      node.dataset.key = k;
    }
    if (rendered.get(node) !== html) {
      node.innerHTML = html;
      rendered.set(node, html);
    }
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
    const expected = previous === null ? container.firstChild : previous.nextSibling;
    if (node !== expected) container.insertBefore(node, expected);
    previous = node;
  }
  for (const node of old.values()) node.remove();
}

export function empty(id, isEmpty) {
  $(`${id}-empty`).hidden = !isEmpty;
}

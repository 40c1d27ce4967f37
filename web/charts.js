/* global document -- browser globals: this file runs in the page, not in Node */
// Small SVG line charts for the dashboard: no library, no build step.

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 320;
const HEIGHT = 130;
const PAD = { left: 36, right: 6, top: 8, bottom: 16 };

/** Calm, distinguishable line colours (light and dark backgrounds). */
export const COLORS = ['#3182ce', '#38a169', '#d69e2e', '#805ad5', '#e53e3e', '#319795'];

function el(name, attributes = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A round upper bound for the axis: 1, 2, 5 × 10^n. */
function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

function format(value) {
  // Short enough for the axis: 12 500 → 12.5k, 200 000 → 200k.
  if (value >= 10_000) return `${Number((value / 1000).toFixed(value >= 100_000 ? 0 : 1))}k`;
  if (value >= 100) return String(Math.round(value));
  if (value >= 10) return value.toFixed(0);
  if (value >= 1) return value.toFixed(1);
  return value === 0 ? '0' : value.toFixed(2);
}

/**
 * Draws lines into `svg`: `lines` is `[{ label, values: (number|null)[] }]`, all of one length (one value per
 * interval, oldest first; null leaves a gap). `since` labels the time axis's start (`2 min ago`); `legend` gets one entry per line
 * with its latest value.
 */
export function lineChart(svg, legend, lines, { since, unit = '' }) {
  svg.replaceChildren();
  const length = Math.max(0, ...lines.map((line) => line.values.length));
  const max = niceMax(Math.max(0, ...lines.flatMap((line) => line.values.filter((v) => v !== null))));
  const innerW = WIDTH - PAD.left - PAD.right;
  const innerH = HEIGHT - PAD.top - PAD.bottom;
  const x = (i) => PAD.left + (length <= 1 ? innerW : (i / (length - 1)) * innerW);
  const y = (v) => PAD.top + innerH - (v / max) * innerH;

  for (const fraction of [0, 0.5, 1]) {
    const value = max * fraction;
    svg.append(
      el('line', { class: 'grid-line', x1: PAD.left, x2: WIDTH - PAD.right, y1: y(value), y2: y(value) }),
      el('text', { x: PAD.left - 4, y: y(value) + 3, 'text-anchor': 'end' }, format(value)),
    );
  }
  svg.append(
    el('text', { x: PAD.left, y: HEIGHT - 4 }, since),
    el('text', { x: WIDTH - PAD.right, y: HEIGHT - 4, 'text-anchor': 'end' }, 'now'),
  );

  legend.replaceChildren();
  lines.forEach((line, index) => {
    const color = COLORS[index % COLORS.length];
    let d = '';
    let pen = false;
    line.values.forEach((value, i) => {
      if (value === null || value === undefined) {
        pen = false;
        return;
      }
      d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(value).toFixed(1)}`;
      pen = true;
    });
    if (d !== '') svg.append(el('path', { d, stroke: color }));
    // A value with no neighbour would be an invisible one-point line: it gets a dot.
    line.values.forEach((value, i) => {
      const lone =
        value !== null && (line.values[i - 1] ?? null) === null && (line.values[i + 1] ?? null) === null;
      if (lone) svg.append(el('circle', { cx: x(i), cy: y(value), r: 2, fill: color }));
    });
    const last = [...line.values].reverse().find((v) => v !== null && v !== undefined);
    const item = document.createElement('span');
    const swatch = document.createElement('i');
    swatch.style.background = color;
    item.append(swatch, `${line.label} ${last === undefined ? '–' : format(last) + unit}`);
    legend.append(item);
  });
  svg.setAttribute(
    'aria-label',
    lines.map((line) => `${line.label}: latest ${format(line.values.at(-1) ?? 0)}${unit}`).join('; '),
  );
}

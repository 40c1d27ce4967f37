/**
 * Notices: what a person running a gateway or worker must know, one concise line each (what happened, to
 * which dependency, source, job or budget, and what happens next). By default they are printed as text with
 * a timestamp; with a JSON logger (`serve --log`) they are JSON lines for machines instead, the same
 * sentence as `msg` and the facts as fields.
 */
import type { Clock, Logger } from '../../core/index.js';

/** How serious a notice is: `warn` for trouble, `info` for a recovery or a change made by hand. */
export type NoticeLevel = 'info' | 'warn';

/** One thing an operator must know. */
export interface Notice {
  /** Stable name for machines (the JSON line's `event`): `breaker_opened`, `job_dead_lettered`, … */
  readonly event: string;
  readonly level: NoticeLevel;
  /** The sentence, without a timestamp. */
  readonly text: string;
  /** The facts (snake_case), for the JSON line. */
  readonly fields: Readonly<Record<string, unknown>>;
}

/** Where notices go. */
export type NoticeSink = (notice: Notice) => void;

/** Notices as text: `<time> <sentence>`, the time in UTC to the second (`2026-01-01T12:00:00Z`). */
export function textNotices(out: (line: string) => void, clock: Clock): NoticeSink {
  return (notice) => out(`${isoSecond(clock.now())} ${notice.text}`);
}

/** Notices as JSON lines: `logger.warn({ event, ...fields }, sentence)` (or `info`). */
export function jsonNotices(logger: Logger): NoticeSink {
  return (notice) => logger[notice.level]({ event: notice.event, ...notice.fields }, notice.text);
}

/** A time (ms since the epoch) in UTC to the second: `2026-01-01T12:00:00Z`. */
export function isoSecond(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/**
 * A duration for a person: `250 ms`, `4 s`, `2.5 s`, `1 min`, `1 min 30 s`, `2 h 5 min` (rounded to the
 * unit shown).
 */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Math.round(ms / 100) / 10} s`;
  if (ms < 3_600_000) {
    const seconds = Math.round(ms / 1_000);
    const rest = seconds % 60;
    return rest === 0 ? `${seconds / 60} min` : `${Math.floor(seconds / 60)} min ${rest} s`;
  }
  const minutes = Math.round(ms / 60_000);
  const rest = minutes % 60;
  return rest === 0 ? `${minutes / 60} h` : `${Math.floor(minutes / 60)} h ${rest} min`;
}

/** Micro-USD as USD without trailing zeros: `4.01`, `0.0008`, `5`. */
export function usd(microUsd: number): string {
  return String(Number((microUsd / 1_000_000).toFixed(6)));
}

/** `text` cut to `max` characters, with `…` when cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

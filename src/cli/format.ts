/** Text output shared by the CLI's commands: aligned tables, times and short JSON. */

/** Rows as columns padded to the widest cell, two spaces apart; the first row is the header. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, col) => cell.padEnd(widths[col]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** ISO 8601 of ms since the epoch, or `-` for none. */
export function iso(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '-' : new Date(ms).toISOString();
}

/** A JSON value on one line, cut at `max` characters (default 200). */
export function short(value: unknown, max = 200): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

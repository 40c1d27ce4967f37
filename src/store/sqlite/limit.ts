/** How many distinct limits one {@link byLimit} keeps prepared; past it the oldest is dropped. */
const MAX_PREPARED = 32;

/**
 * Statements that differ only in the number after `LIMIT`, with that number written into the SQL, each
 * prepared on first use and kept.
 *
 * Why not `LIMIT ?`: SQLite marks a statement whose plan may depend on a bound value to be prepared again
 * each time that parameter is bound (the statement's `expmask`), and the SQLite that better-sqlite3 12 ships
 * (3.51, built with STAT4) treats a bound LIMIT so: `LIMIT ?` cost as much as a re-prepare on every call,
 * several times the claim's whole walk of `jobs_claim` to its first due job with the limit written in
 * (docs/performance.md#sqlite-store).
 *
 * `limit` must be a positive safe integer (callers clamp theirs first); anything else throws a `RangeError`,
 * so only digits reach the SQL.
 *
 * @param prepare builds and prepares the statement for one limit (`LIMIT ${limit}` in its SQL).
 */
export function byLimit<S>(prepare: (limit: number) => S): (limit: number) => S {
  const prepared = new Map<number, S>();
  return (limit) => {
    let statement = prepared.get(limit);
    if (statement === undefined) {
      if (!Number.isSafeInteger(limit) || limit < 1) {
        throw new RangeError(`LIMIT must be a positive integer, got ${String(limit)}`);
      }
      statement = prepare(limit);
      if (prepared.size >= MAX_PREPARED) prepared.delete(prepared.keys().next().value!);
      prepared.set(limit, statement);
    }
    return statement;
  };
}

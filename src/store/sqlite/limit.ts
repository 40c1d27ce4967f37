/** How many distinct limits one {@link byLimit} keeps prepared; past it the oldest is dropped. */
const MAX_PREPARED = 32;

/**
 * Statements that differ only in the number after `LIMIT`, with that number written into the SQL, each
 * prepared on first use and kept.
 *
 * Why not `LIMIT ?`: since SQLite 3.47 the query planner may read a bound LIMIT's value, and a statement whose
 * plan depends on a bound value is marked to be prepared again each time that parameter is bound (the
 * `expmask` of `sqlite3VdbeSetVarmask`). better-sqlite3 12 ships SQLite 3.51, so `LIMIT ?` cost a full
 * re-prepare on every call: measured here 5–10 µs, against ~2 µs for the claim's whole walk of `jobs_claim` to
 * its first due job with the limit written in.
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

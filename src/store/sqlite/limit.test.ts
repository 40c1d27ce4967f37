import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { byLimit } from './limit.js';

describe('byLimit', () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3), (4), (5);');
  const made: number[] = [];
  const select = byLimit((limit) => {
    made.push(limit);
    return db.prepare<[number], { n: number }>(`SELECT n FROM t WHERE n > ? ORDER BY n LIMIT ${limit}`);
  });
  afterEach(() => {
    made.length = 0;
  });

  it('prepares one statement per limit, with the limit in its SQL, and reuses it', () => {
    expect(select(2).all(0)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(select(2).all(3)).toEqual([{ n: 4 }, { n: 5 }]);
    expect(select(3).all(1)).toEqual([{ n: 2 }, { n: 3 }, { n: 4 }]);
    expect(select(2)).toBe(select(2));
    expect(select(2).source).toContain('LIMIT 2');
    expect(made).toEqual([2, 3]);
  });

  it('keeps at most 32 limits prepared, dropping the oldest', () => {
    for (let limit = 100; limit < 133; limit++) select(limit);
    expect(made).toHaveLength(33);
    made.length = 0;
    select(132);
    select(101);
    expect(made).toEqual([]);
    select(100);
    expect(made).toEqual([100]);
  });

  it.each([0, -1, 1.5, Number.NaN, Infinity])(
    'refuses %s: only a positive integer reaches the SQL',
    (limit) => {
      expect(() => select(limit)).toThrow(RangeError);
      expect(made).toEqual([]);
    },
  );
});

/**
 * Route conditions on request metadata (the `x-breakwater-metadata` header): a small MongoDB-style query
 * language. A condition is an object whose keys are metadata keys (each with a value, meaning `$eq`, or an
 * object of operators, all of which must hold) and the combinators `$and` / `$or` (lists of conditions). Every
 * key of one condition object must hold (an implicit `$and`).
 *
 * ```json
 * { "tier": "pro", "country": { "$in": ["FR", "BE"] }, "$or": [{ "age": { "$gte": 18 } }, { "guardian": { "$exists": true } }] }
 * ```
 *
 * Semantics (MongoDB's where they differ from the obvious):
 * - `$eq` holds when the key is present with that exact value (`1` is not `"1"`; `null` matches only `null`);
 *   `$ne` is its negation, so it also holds when the key is absent. `$in` / `$nin` likewise.
 * - `$gt $gte $lt $lte` compare numbers with numbers and strings with strings (code-unit order, which is
 *   chronological for ISO 8601 dates); a value of another type (or an absent key) never satisfies them.
 * - `$exists: true` holds when the key is present (a `null` value counts as present).
 */
import { z } from 'zod';
import { HEADER_BOUNDS } from '../request-headers.js';
import type { Metadata, MetadataValue } from '../types.js';

/** The operators a metadata key can be tested with. */
export interface ConditionOperators {
  $eq?: MetadataValue;
  $ne?: MetadataValue;
  $in?: readonly MetadataValue[];
  $nin?: readonly MetadataValue[];
  $gt?: number | string;
  $gte?: number | string;
  $lt?: number | string;
  $lte?: number | string;
  $exists?: boolean;
}

/** A condition: metadata keys to a value (`$eq`) or operators, and `$and` / `$or` lists. */
export interface RouteCondition {
  readonly $and?: readonly RouteCondition[];
  readonly $or?: readonly RouteCondition[];
  readonly [key: string]: MetadataValue | ConditionOperators | readonly RouteCondition[] | undefined;
}

/** Most entries of one `$in` / `$nin` list, and of one `$and` / `$or` list. */
export const CONDITION_BOUNDS = { maxList: 256 } as const;

const MAX_VALUE = HEADER_BOUNDS.metadata.maxValueLength;
const scalar = z.union([z.string().max(MAX_VALUE), z.number().finite(), z.boolean(), z.null()], {
  error: `must be a string (at most ${MAX_VALUE} characters), a finite number, a boolean or null`,
});
const comparable = z.union([z.number().finite(), z.string().max(MAX_VALUE)], {
  error: `must be a finite number or a string (at most ${MAX_VALUE} characters)`,
});
const OPERATORS = ['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte', '$exists'] as const;
const list = z.array(scalar).min(1).max(CONDITION_BOUNDS.maxList);
const operators = z
  .strictObject({
    $eq: scalar.optional(),
    $ne: scalar.optional(),
    $in: list.optional(),
    $nin: list.optional(),
    $gt: comparable.optional(),
    $gte: comparable.optional(),
    $lt: comparable.optional(),
    $lte: comparable.optional(),
    $exists: z.boolean().optional(),
  })
  .refine((o) => Object.keys(o).length > 0, { message: 'must name at least one operator' });

/**
 * The zod schema of a condition. Each issue's path leads to the bad part (`tier.$in.2`, `$or.1.age`), so
 * `parseRouteDefinition` can name it.
 */
export const conditionSchema: z.ZodType<RouteCondition> = z
  .record(z.string(), z.unknown())
  .superRefine((value, ctx) => {
    const entries = Object.entries(value);
    if (entries.length === 0) {
      ctx.addIssue({ code: 'custom', message: 'must test at least one metadata key' });
      return;
    }
    for (const [key, test] of entries) {
      const nested = (schema: z.ZodType, at: PropertyKey[]): void => {
        const parsed = schema.safeParse(test);
        if (parsed.success) return;
        for (const issue of parsed.error.issues) {
          ctx.addIssue({ code: 'custom', message: issue.message, path: [...at, ...issue.path] });
        }
      };
      if (key === '$and' || key === '$or') {
        nested(z.array(conditionSchema).min(1).max(CONDITION_BOUNDS.maxList), [key]);
      } else if (key.startsWith('$')) {
        ctx.addIssue({
          code: 'custom',
          message: `unknown combinator "${key}" (use $and or $or; operators go inside a key's object)`,
          path: [key],
        });
      } else if (key.length > HEADER_BOUNDS.metadata.maxKeyLength) {
        ctx.addIssue({
          code: 'custom',
          message: `metadata keys are at most ${HEADER_BOUNDS.metadata.maxKeyLength} characters`,
          path: [key],
        });
      } else if (typeof test === 'object' && test !== null && !Array.isArray(test)) {
        const unknown = Object.keys(test).filter((k) => !(OPERATORS as readonly string[]).includes(k));
        for (const op of unknown) {
          ctx.addIssue({
            code: 'custom',
            message: `unknown operator "${op}" (known: ${OPERATORS.join(' ')})`,
            path: [key, op],
          });
        }
        if (unknown.length === 0) nested(operators, [key]);
      } else {
        nested(scalar, [key]);
      }
    }
  }) as unknown as z.ZodType<RouteCondition>;

/** A compiled condition: true when `metadata` satisfies it. */
export type ConditionTest = (metadata: Metadata) => boolean;

/** Compiles a validated condition into a test (no parsing left for request time). */
export function compileCondition(condition: RouteCondition): ConditionTest {
  const tests: ConditionTest[] = [];
  for (const [key, value] of Object.entries(condition)) {
    if (value === undefined) continue;
    if (key === '$and') {
      const all = (value as RouteCondition[]).map(compileCondition);
      tests.push((m) => all.every((t) => t(m)));
    } else if (key === '$or') {
      const any = (value as RouteCondition[]).map(compileCondition);
      tests.push((m) => any.some((t) => t(m)));
    } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      tests.push(fieldTest(key, value as ConditionOperators));
    } else {
      const expected = value as MetadataValue;
      tests.push((m) => has(m, key) && m[key] === expected);
    }
  }
  return (m) => tests.every((t) => t(m));
}

function fieldTest(key: string, ops: ConditionOperators): ConditionTest {
  const tests: ((present: boolean, v: MetadataValue | undefined) => boolean)[] = [];
  if (ops.$eq !== undefined) tests.push((p, v) => p && v === ops.$eq);
  if (ops.$ne !== undefined) tests.push((p, v) => !(p && v === ops.$ne));
  if (ops.$in !== undefined) {
    const set = new Set<MetadataValue>(ops.$in);
    tests.push((p, v) => p && set.has(v!));
  }
  if (ops.$nin !== undefined) {
    const set = new Set<MetadataValue>(ops.$nin);
    tests.push((p, v) => !(p && set.has(v!)));
  }
  const compare = (
    bound: number | string | undefined,
    holds: (a: number | string, b: number | string) => boolean,
  ) => {
    if (bound === undefined) return;
    tests.push((p, v) => p && typeof v === typeof bound && holds(v as number | string, bound));
  };
  compare(ops.$gt, (a, b) => a > b);
  compare(ops.$gte, (a, b) => a >= b);
  compare(ops.$lt, (a, b) => a < b);
  compare(ops.$lte, (a, b) => a <= b);
  if (ops.$exists !== undefined) tests.push((p) => p === ops.$exists);
  return (m) => {
    const present = has(m, key);
    const v = present ? m[key] : undefined;
    return tests.every((t) => t(present, v));
  };
}

function has(metadata: Metadata, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(metadata, key);
}

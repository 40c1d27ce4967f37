/**
 * The route definition format (docs/ai-gateway.md#routes): a JSON tree of nodes, validated with zod. A
 * definition is one node; see docs/ai-gateway.md and `RouteNode` for each type. Validation fails with a 400
 * problem whose `reason` is `invalid_route` and whose `path` names the bad field (`$.chain[1].then.model`).
 */
import { z } from 'zod';
import { BreakwaterError } from '../../core/index.js';
import type { RateRule, SpendRule } from '../limits/limits.js';
import {
  metadataKeySchema,
  nameSchema,
  rateRuleFields,
  scopeSchema,
  stepSettingsFields,
  windowMsSchema,
} from '../schema-parts.js';
import type { AiStep } from '../types.js';
import { conditionSchema, type RouteCondition } from './conditions.js';

/** A model step: one provider and model with its own timeout and retries (see `AiStep`). */
export interface ModelNode extends AiStep {
  type: 'model';
}

/** Tries each node in order; the first that answers before its first byte wins. */
export interface FallbackNode {
  type: 'fallback';
  chain: RouteNode[];
}

/** The first branch whose `when` holds for the request's metadata, else `default` (else a 400). */
export interface ConditionalNode {
  type: 'conditional';
  branches: { when: RouteCondition; then: RouteNode }[];
  default?: RouteNode;
}

/**
 * Percentage splits (weights sum to 100). With `key`, a request is placed by a hash of `seed` and its
 * metadata value of `key` (the same value always takes the same branch); without `key`, or when the request
 * lacks it, at random.
 */
export interface SplitNode {
  type: 'split';
  /** A metadata key (`user`) whose value decides the branch. */
  key?: string;
  /** Mixed into the hash (default: the route name and this node's path), so two splits do not correlate. */
  seed?: string;
  splits: { weight: number; then: RouteNode }[];
}

/** A rate or spend rule as the gateway's (`rateRules` / `spendRules`), with its `kind`. */
export type RouteLimitRule = ({ kind: 'rate' } & RateRule) | ({ kind: 'spend' } & SpendRule);

/**
 * Runs `then` under `rule`, checked before every provider call inside it; when the rule refuses, runs `else`
 * (a cheaper model, say) instead, or without `else` answers the 429.
 */
export interface LimitNode {
  type: 'limit';
  rule: RouteLimitRule;
  then: RouteNode;
  else?: RouteNode;
}

/** A node of a route definition. */
export type RouteNode = ModelNode | FallbackNode | ConditionalNode | SplitNode | LimitNode;

/** Size bounds of a definition. */
export const ROUTE_DEFINITION_BOUNDS = {
  /** Nodes nested at most this deep (the root is depth 1). */
  maxDepth: 16,
  /** Nodes in all. */
  maxNodes: 256,
  /** Entries of a chain, of a conditional's branches, of a split's splits. */
  maxChildren: 32,
} as const;

const name = nameSchema;
const children = <T extends z.ZodType>(item: T) =>
  z.array(item).min(1).max(ROUTE_DEFINITION_BOUNDS.maxChildren);

const modelNode = z.strictObject({
  type: z.literal('model'),
  name,
  provider: name,
  model: z.string().min(1).max(256),
  ...stepSettingsFields,
});

const fallbackNode = z.strictObject({
  type: z.literal('fallback'),
  get chain() {
    return children(node);
  },
});

const conditionalNode = z.strictObject({
  type: z.literal('conditional'),
  get branches() {
    return children(
      z.strictObject({
        when: conditionSchema,
        get then() {
          return node;
        },
      }),
    );
  },
  get default() {
    return node.optional();
  },
});

const splitNode = z.strictObject({
  type: z.literal('split'),
  key: metadataKeySchema.optional(),
  seed: z.string().min(1).max(256).optional(),
  get splits() {
    return children(
      z.strictObject({
        weight: z.number().finite().min(0).max(100),
        get then() {
          return node;
        },
      }),
    ).refine((s) => Math.abs(s.reduce((sum, x) => sum + x.weight, 0) - 100) < 1e-9, {
      message: 'weights must add up to 100',
    });
  },
});

const rule = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('rate'), ...rateRuleFields }),
  z.strictObject({
    kind: z.literal('spend'),
    name,
    budgetUsd: z.number().finite().positive(),
    windowMs: windowMsSchema,
    scope: scopeSchema,
  }),
]);

const limitNode = z.strictObject({
  type: z.literal('limit'),
  rule,
  get then() {
    return node;
  },
  get else() {
    return node.optional();
  },
});

const node: z.ZodType<RouteNode> = z.discriminatedUnion('type', [
  modelNode,
  fallbackNode,
  conditionalNode,
  splitNode,
  limitNode,
]) as unknown as z.ZodType<RouteNode>;

/** What {@link parseRouteDefinition} can check besides the format. */
export interface ParseRouteOptions {
  /** The gateway's provider names: a model step naming another is refused. Default: not checked. */
  providers?: readonly string[];
}

/** One problem of a definition: where (`$.then.model`) and what. */
export interface RouteIssue {
  path: string;
  message: string;
}

/**
 * Validates a route definition (any JSON value, as stored) and returns it typed.
 *
 * Besides each node's fields: split weights add up to 100; step names are unique in the definition (a name
 * used twice must describe the same step, so `x-breakwater-step` always means one thing); limit rule names
 * are unique (they name the rule's counters, shared by every version of the route, so a new version keeps
 * the budget already spent); at most {@link ROUTE_DEFINITION_BOUNDS} nodes and depth.
 *
 * @throws BreakwaterError `invalid_payload` (400) with `details { reason: 'invalid_route', path, issues }`:
 *   `path` the first bad field as a JSONPath (`$.branches[0].then.provider`), `issues` up to 10 of them.
 */
export function parseRouteDefinition(definition: unknown, options: ParseRouteOptions = {}): RouteNode {
  const tooDeep = depthIssue(definition);
  if (tooDeep !== undefined) throw invalidRoute([tooDeep]);
  const parsed = node.safeParse(definition);
  if (!parsed.success) {
    throw invalidRoute(
      parsed.error.issues.map((issue) => ({ path: jsonPath(issue.path), message: issueMessage(issue) })),
    );
  }
  const issues = semanticIssues(parsed.data, options);
  if (issues.length > 0) throw invalidRoute(issues);
  return parsed.data;
}

/** Every model step of a tree, with its path, depth-first in document order. */
export function modelSteps(root: RouteNode): { step: ModelNode; path: string }[] {
  const found: { step: ModelNode; path: string }[] = [];
  walk(root, '$', (n, path) => {
    if (n.type === 'model') found.push({ step: n, path });
  });
  return found;
}

/** Calls `visit` on every node, depth-first in document order, with its JSONPath and depth (root 1). */
export function walk(
  root: RouteNode,
  path: string,
  visit: (n: RouteNode, path: string, depth: number) => void,
  depth = 1,
): void {
  visit(root, path, depth);
  for (const [child, at] of childrenOf(root, path)) walk(child, at, visit, depth + 1);
}

function childrenOf(n: RouteNode, path: string): [RouteNode, string][] {
  switch (n.type) {
    case 'model':
      return [];
    case 'fallback':
      return n.chain.map((c, i) => [c, `${path}.chain[${i}]`]);
    case 'conditional':
      return [
        ...n.branches.map((b, i): [RouteNode, string] => [b.then, `${path}.branches[${i}].then`]),
        ...(n.default === undefined ? [] : [[n.default, `${path}.default`] as [RouteNode, string]]),
      ];
    case 'split':
      return n.splits.map((s, i) => [s.then, `${path}.splits[${i}].then`]);
    case 'limit':
      return [
        [n.then, `${path}.then`],
        ...(n.else === undefined ? [] : [[n.else, `${path}.else`] as [RouteNode, string]]),
      ];
  }
}

function semanticIssues(root: RouteNode, options: ParseRouteOptions): RouteIssue[] {
  const issues: RouteIssue[] = [];
  const steps = new Map<string, ModelNode>();
  const rules = new Set<string>();
  const providers = options.providers === undefined ? undefined : new Set(options.providers);
  let count = 0;
  walk(root, '$', (n, path, depth) => {
    count++;
    if (depth > ROUTE_DEFINITION_BOUNDS.maxDepth) {
      issues.push({ path, message: `nodes nest at most ${ROUTE_DEFINITION_BOUNDS.maxDepth} deep` });
    }
    if (n.type === 'model') {
      const seen = steps.get(n.name);
      if (seen !== undefined && !sameStep(seen, n)) {
        issues.push({
          path: `${path}.name`,
          message: `another step is named "${n.name}" with other settings`,
        });
      }
      steps.set(n.name, n);
      if (providers !== undefined && !providers.has(n.provider)) {
        issues.push({
          path: `${path}.provider`,
          message: `there is no provider named "${n.provider}" (known: ${[...providers].join(', ')})`,
        });
      }
    } else if (n.type === 'limit') {
      if (rules.has(n.rule.name)) {
        issues.push({ path: `${path}.rule.name`, message: `another limit rule is named "${n.rule.name}"` });
      }
      rules.add(n.rule.name);
    }
  });
  if (count > ROUTE_DEFINITION_BOUNDS.maxNodes) {
    issues.unshift({ path: '$', message: `a route has at most ${ROUTE_DEFINITION_BOUNDS.maxNodes} nodes` });
  }
  return issues;
}

function sameStep(a: ModelNode, b: ModelNode): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof ModelNode>;
  return [...keys].every((k) => a[k] === b[k]);
}

/**
 * Refuses a value nested far deeper than any valid definition before zod walks it (recursion on a
 * hostile, deeply nested body would overflow the stack). Iterative.
 */
function depthIssue(value: unknown): RouteIssue | undefined {
  // Each node level adds at most 3 JSON levels (node → branches → entry → then).
  const limit = ROUTE_DEFINITION_BOUNDS.maxDepth * 4;
  const stack: { v: unknown; depth: number; path: (string | number)[] }[] = [
    { v: value, depth: 0, path: [] },
  ];
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > limit) return { path: jsonPath(path), message: 'the definition is nested too deep' };
    for (const [k, child] of Object.entries(v)) {
      stack.push({ v: child, depth: depth + 1, path: [...path, Array.isArray(v) ? Number(k) : k] });
    }
  }
  return undefined;
}

/** `['chain', 0, 'model']` → `$.chain[0].model`; a key that is not an identifier as `['odd key']`. */
export function jsonPath(path: readonly PropertyKey[]): string {
  let text = '$';
  for (const part of path) {
    if (typeof part === 'number') text += `[${part}]`;
    else if (typeof part === 'string' && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(part)) text += `.${part}`;
    else text += `[${JSON.stringify(String(part))}]`;
  }
  return text;
}

function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_union' && 'note' in issue && issue.note === 'No matching discriminator') {
    const options = (issue as { options?: unknown[] }).options ?? [];
    return `must be one of ${options.map((o) => JSON.stringify(o)).join(', ')}`;
  }
  return issue.message;
}

function invalidRoute(issues: RouteIssue[]): BreakwaterError {
  const first = issues[0]!;
  return new BreakwaterError('invalid_payload', {
    message: `The route definition is invalid at ${first.path}: ${first.message}.`,
    details: { reason: 'invalid_route', path: first.path, issues: issues.slice(0, 10) },
  });
}

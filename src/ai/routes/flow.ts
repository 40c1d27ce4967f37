/**
 * A validated route definition compiled into an `AiFlow` (the gateway runs it for `dynamic/<name>`): every
 * node becomes a function of the request, decided before anything reaches the client. Model steps run with
 * `executeStep`; the steps that failed before one served are carried along (`failures`, `attempts`) as
 * `runFallbackChain` does, across nested nodes.
 */
import { createHash } from 'node:crypto';
import { BreakwaterError } from '../../core/index.js';
import { executeStep } from '../step/execute.js';
import type { AiFlow, AiRequest, AiStep, StepAnswer, StepContext, StepFailure } from '../types.js';
import { compileCondition } from './conditions.js';
import type { RouteNode, SplitNode } from './definition.js';
import {
  LayeredLimits,
  limitLayer,
  memoryLimitStores,
  refusingRule,
  type LimitLayer,
  type RouteLimitStores,
} from './route-limits.js';

/** A compiled route: an `AiFlow` that also shows the definition it runs. */
export interface RouteFlow extends AiFlow {
  readonly version: number | undefined;
  readonly definition: RouteNode;
}

/** What {@link compileRoute} needs besides the definition. */
export interface CompileRouteOptions {
  /** The route's name (`x-breakwater-route`, the default split seeds, the limit counters' prefix). */
  name: string;
  version?: number;
  /** Where limit nodes count (default: this flow's own memory, so give a resolver's shared stores). */
  stores?: RouteLimitStores;
}

/** What one request's run carries through the tree. */
interface Run {
  readonly request: AiRequest;
  readonly ctx: StepContext;
  /** Steps that failed so far, and the provider calls they made. */
  readonly trail: { failures: StepFailure[]; attempts: number };
}

type Exec = (run: Run) => Promise<StepAnswer>;
type LayerOf = (ctx: StepContext) => LimitLayer;

/**
 * Compiles `definition` (already validated by `parseRouteDefinition`) into a flow. Errors the flow throws:
 * the serving step's (see `executeStep`) with `details.failed_steps` (`<step>:<code>` of every step that
 * failed) and `details.attempts` (calls across them); `invalid_payload` with `reason: 'no_matching_branch'`
 * when a conditional has no branch for the request's metadata and no default.
 */
export function compileRoute(definition: RouteNode, options: CompileRouteOptions): RouteFlow {
  const env: Env = { name: options.name, stores: options.stores };
  const root = compileNode(definition, '$', [], env);
  return {
    name: options.name,
    version: options.version,
    definition,
    async run(request, ctx) {
      const trail = { failures: [] as StepFailure[], attempts: 0 };
      try {
        return await root({ request, ctx, trail });
      } catch (error) {
        throw withTrail(error, trail);
      }
    },
  };
}

interface Env {
  readonly name: string;
  stores: RouteLimitStores | undefined;
}

function compileNode(n: RouteNode, path: string, layers: readonly LayerOf[], env: Env): Exec {
  switch (n.type) {
    case 'model': {
      const { type: _type, ...step } = n;
      return modelExec(step, layers);
    }
    case 'fallback': {
      const chain = n.chain.map((c, i) => compileNode(c, `${path}.chain[${i}]`, layers, env));
      return async (run) => {
        for (let i = 0; ; i++) {
          try {
            return await chain[i]!(run);
          } catch (error) {
            if (i === chain.length - 1 || stopsChain(error, run.request)) throw error;
          }
        }
      };
    }
    case 'conditional': {
      const branches = n.branches.map((b, i) => ({
        test: compileCondition(b.when),
        exec: compileNode(b.then, `${path}.branches[${i}].then`, layers, env),
      }));
      const fallback =
        n.default === undefined ? undefined : compileNode(n.default, `${path}.default`, layers, env);
      return (run) => {
        const metadata = run.request.metadata;
        for (const b of branches) if (b.test(metadata)) return b.exec(run);
        if (fallback !== undefined) return fallback(run);
        return Promise.reject(
          new BreakwaterError('invalid_payload', {
            message: `No branch of the route ${env.name} (at ${path}) matches this request's metadata, and it has no default.`,
            details: { reason: 'no_matching_branch', path },
          }),
        );
      };
    }
    case 'split':
      return splitExec(n, path, layers, env);
    case 'limit': {
      const rule = n.rule;
      const perCtx = new WeakMap<StepContext, LimitLayer>();
      const layerOf: LayerOf = (ctx) => {
        let layer = perCtx.get(ctx);
        if (layer === undefined) {
          env.stores ??= memoryLimitStores(ctx.clock);
          layer = limitLayer(env.name, rule, env.stores, ctx.prices, ctx.clock);
          perCtx.set(ctx, layer);
        }
        return layer;
      };
      const then = compileNode(n.then, `${path}.then`, [...layers, layerOf], env);
      const otherwise = n.else === undefined ? undefined : compileNode(n.else, `${path}.else`, layers, env);
      return async (run) => {
        try {
          return await then(run);
        } catch (error) {
          // Only this node's own refusal diverts: a provider failure, or an outer rule's refusal, does not.
          if (otherwise === undefined || refusingRule(error) !== rule.name || run.request.signal.aborted) {
            throw error;
          }
          return otherwise(run);
        }
      };
    }
  }
}

/** A model step, under the limit layers of the limit nodes around it (bound once per gateway context). */
function modelExec(step: AiStep, layers: readonly LayerOf[]): Exec {
  const contexts = new WeakMap<StepContext, StepContext>();
  const contextFor = (ctx: StepContext): StepContext => {
    if (layers.length === 0) return ctx;
    let bound = contexts.get(ctx);
    if (bound === undefined) {
      const limits = new LayeredLimits(
        layers.map((layerOf) => layerOf(ctx)),
        ctx.limits,
        ctx.prices,
        ctx.clock,
      );
      bound = { ...ctx, limits };
      contexts.set(ctx, bound);
    }
    return bound;
  };
  return async ({ request, ctx, trail }) => {
    try {
      return await executeStep(step, request, contextFor(ctx), {
        failures: [...trail.failures],
        attempts: trail.attempts,
      });
    } catch (error) {
      const e = error as BreakwaterError;
      const attempts = typeof e.details?.attempts === 'number' ? e.details.attempts : 0;
      trail.failures.push({ step: step.name, code: String(e.code ?? 'internal_error'), attempts });
      trail.attempts += attempts;
      throw error;
    }
  };
}

/** 2^48: the hash gives 48 bits. */
const HASH_RANGE = 2 ** 48;

function splitExec(n: SplitNode, path: string, layers: readonly LayerOf[], env: Env): Exec {
  const arms = n.splits.map((s, i) => ({
    weight: s.weight,
    exec: compileNode(s.then, `${path}.splits[${i}].then`, layers, env),
  }));
  const lastLive = arms.findLast((a) => a.weight > 0) ?? arms.at(-1)!;
  const seed = n.seed ?? `${env.name}:${path}`;
  const key = n.key;
  return (run) => {
    const metadata = run.request.metadata;
    const value = key !== undefined && Object.hasOwn(metadata, key) ? metadata[key] : undefined;
    const unit = value === undefined ? run.ctx.random() : hashUnit(seed, JSON.stringify(value));
    const point = unit * 100;
    let cumulative = 0;
    for (const arm of arms) {
      cumulative += arm.weight;
      if (point < cumulative) return arm.exec(run);
    }
    return lastLive.exec(run);
  };
}

/** A uniform number in [0, 1) from `seed` and `value` (SHA-256, first 48 bits): the same pair, the same number. */
export function hashUnit(seed: string, value: string): number {
  const digest = createHash('sha256').update(seed).update('\u0000').update(value).digest();
  return digest.readUIntBE(0, 6) / HASH_RANGE;
}

/** Failures no other node of a fallback can fix (as `runFallbackChain`): the client left, a bad request. */
function stopsChain(error: unknown, request: AiRequest): boolean {
  if (request.signal.aborted) return true;
  const e = error as BreakwaterError;
  if (e?.code === 'canceled') return true;
  const reason = e?.details?.reason;
  return e?.code === 'invalid_payload' && (reason === 'invalid_body' || reason === 'invalid_header');
}

function withTrail(error: unknown, trail: Run['trail']): unknown {
  if (!(error instanceof BreakwaterError) || trail.failures.length === 0) return error;
  return error.withDetails({
    attempts: trail.attempts,
    failed_steps: trail.failures.map((f) => `${f.step}:${f.code}`),
  });
}

/**
 * What a new API key may say, checked with zod: the library's input ({@link ApiKeyInput}, camelCase) and the
 * admin API's JSON body (snake_case, {@link readApiKeyBody}). Both share the leaf rules, so a name, a scope, a
 * metadata entry or an AI limit is refused the same way from the CLI, the API and code. Bounds come from the
 * store (`API_KEY_BOUNDS`), so nothing the edge accepts is refused by the store afterwards.
 */
import { z } from 'zod';
import {
  BreakwaterError,
  SCOPES,
  type PrincipalAiLimits,
  type PrincipalBudget,
  type PrincipalRateRule,
} from '../../core/index.js';
import { API_KEY_BOUNDS } from '../../store/index.js';

/** Longest lifetime a key can be given, ms: 10 years. */
export const MAX_KEY_LIFETIME_MS = 10 * 366 * 86_400_000;

/** Bounds of a key's AI limits. */
export const AI_LIMIT_BOUNDS = {
  maxAllowedModels: 100,
  maxModelLength: 200,
  maxBudgets: 10,
  maxRateRules: 10,
  /** A window: 1 ms to 366 days (as the gateway's own rules). */
  maxWindowMs: 366 * 86_400_000,
  maxLimitUsd: 1_000_000,
  maxRequests: 1_000_000,
} as const;

/** A new key, as code gives it (`ApiKeys.create`). */
export interface ApiKeyInput {
  /** 1 to 100 characters, no control characters; for people, not unique. */
  name: string;
  /** At least one of core's `SCOPES` (`mcp`, `ai`, `jobs`, `metrics`, `admin`); duplicates are dropped. */
  scopes: readonly string[];
  /** Bound metadata: at most 20 keys of 1 to 64 `[A-Za-z0-9_.-]`, values up to 200 characters. Default none. */
  metadata?: Readonly<Record<string, string>>;
  /** May add metadata through `x-breakwater-metadata` (default false). */
  trustedBackend?: boolean;
  /** When it stops working, ms since the epoch (after now); or null/absent: never. Not with `expiresInMs`. */
  expiresAt?: number | null;
  /** Lifetime from now, ms (1 to 10 years). Not with `expiresAt`. */
  expiresInMs?: number;
  /** The key's own AI gateway limits (default none). */
  ai?: PrincipalAiLimits | null;
}

const CONTROL = /\p{Cc}/u;
const b = API_KEY_BOUNDS;
const a = AI_LIMIT_BOUNDS;

const nameSchema = z
  .string()
  .min(1)
  .max(b.maxNameLength)
  .refine((value) => value.trim() !== '', 'must not be blank')
  .refine((value) => !CONTROL.test(value), 'must not hold control characters');
const scopesSchema = z
  .array(z.enum(SCOPES))
  .min(1)
  .max(SCOPES.length * 2);
const metadataSchema = z
  .unknown()
  // A record drops a `__proto__` key without reaching the key rule: refused here instead of lost.
  .refine(
    (m) => typeof m !== 'object' || m === null || !Object.hasOwn(m, '__proto__'),
    'keys must not be __proto__',
  )
  .pipe(
    z
      .record(
        z
          .string()
          .regex(
            new RegExp(`^[A-Za-z0-9_.-]{1,${b.maxMetadataKeyLength}}$`),
            'keys must be 1 to 64 of A-Z a-z 0-9 _ . -',
          ),
        z
          .string()
          .max(b.maxMetadataValueLength)
          .refine((value) => !CONTROL.test(value), 'values must not hold control characters'),
      )
      .refine(
        (m) => Object.keys(m).length <= b.maxMetadataKeys,
        `must have at most ${b.maxMetadataKeys} keys`,
      ),
  );
const windowMs = z.number().int().min(1).max(a.maxWindowMs);
const window = z.enum(['fixed', 'sliding']).optional();
const models = z
  .array(
    z
      .string()
      .min(1)
      .max(a.maxModelLength)
      .refine((value) => !CONTROL.test(value), 'must not hold control characters'),
  )
  .min(1)
  .max(a.maxAllowedModels);
const limitUsd = z.number().positive().max(a.maxLimitUsd);
const requests = z.number().int().min(1).max(a.maxRequests);

const aiSchema = z.strictObject({
  allowedModels: models.optional(),
  budgets: z.array(z.strictObject({ limitUsd, windowMs, window })).max(a.maxBudgets).optional(),
  rateRules: z
    .array(z.strictObject({ limit: requests, windowMs, window }))
    .max(a.maxRateRules)
    .optional(),
});

const inputSchema = z.strictObject({
  name: nameSchema,
  scopes: scopesSchema,
  metadata: metadataSchema.optional(),
  trustedBackend: z.boolean().optional(),
  expiresAt: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).nullable().optional(),
  expiresInMs: z.number().int().min(1).max(MAX_KEY_LIFETIME_MS).optional(),
  ai: aiSchema.nullable().optional(),
});

const bodySchema = z.strictObject({
  name: nameSchema,
  scopes: scopesSchema,
  metadata: metadataSchema.optional(),
  trusted_backend: z.boolean().optional(),
  expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
  expires_in_ms: z.number().int().min(1).max(MAX_KEY_LIFETIME_MS).optional(),
  ai: z
    .strictObject({
      allowed_models: models.optional(),
      budgets: z
        .array(z.strictObject({ limit_usd: limitUsd, window_ms: windowMs, window }))
        .max(a.maxBudgets)
        .optional(),
      rate_rules: z
        .array(z.strictObject({ limit: requests, window_ms: windowMs, window }))
        .max(a.maxRateRules)
        .optional(),
    })
    .nullable()
    .optional(),
});

/** A checked input: what the store needs besides the id, hash and times. */
export interface CheckedInput {
  name: string;
  scopes: string[];
  metadata: Record<string, string>;
  trustedBackend: boolean;
  /** Absolute, ms; null: never. */
  expiresAt: number | null;
  ai: PrincipalAiLimits | null;
}

/**
 * `input` checked at `now`.
 * @throws BreakwaterError `invalid_payload` (400, `details { reason: 'invalid_key_input', field, issues }`)
 *   naming the first bad field; also for both `expiresAt` and `expiresInMs`, or an expiry not after `now`.
 */
export function checkApiKeyInput(input: ApiKeyInput, now: number): CheckedInput {
  const data = parse(inputSchema, input, 'input');
  if (data.expiresAt != null && data.expiresInMs !== undefined) {
    throw invalid('expiresAt', 'give expiresAt or expiresInMs, not both');
  }
  const expiresAt = data.expiresInMs !== undefined ? now + data.expiresInMs : (data.expiresAt ?? null);
  if (expiresAt !== null && expiresAt <= now) {
    throw invalid(
      'expiresAt',
      `the key would expire at ${new Date(expiresAt).toISOString()}, which is not in the future`,
    );
  }
  return {
    name: data.name,
    scopes: [...new Set(data.scopes)],
    metadata: { ...data.metadata },
    trustedBackend: data.trustedBackend ?? false,
    expiresAt,
    ai: aiLimits(data.ai),
  };
}

/** Drops what says nothing: absent lists, and an object with no limit at all (null). */
function aiLimits(ai: z.infer<typeof aiSchema> | null | undefined): PrincipalAiLimits | null {
  if (ai == null) return null;
  const limits: { allowedModels?: string[]; budgets?: PrincipalBudget[]; rateRules?: PrincipalRateRule[] } =
    {};
  if (ai.allowedModels !== undefined) limits.allowedModels = [...new Set(ai.allowedModels)];
  if (ai.budgets !== undefined && ai.budgets.length > 0) limits.budgets = ai.budgets.map(withWindow);
  if (ai.rateRules !== undefined && ai.rateRules.length > 0) limits.rateRules = ai.rateRules.map(withWindow);
  return Object.keys(limits).length === 0 ? null : limits;
}

/** A rule as stored: its window kind written out (`fixed` unless `sliding`). */
function withWindow<T extends { window?: 'fixed' | 'sliding' }>(
  rule: T,
): T & { window: 'fixed' | 'sliding' } {
  return { ...rule, window: rule.window ?? 'fixed' };
}

/**
 * The admin API's JSON body (`POST /admin/api/keys`) as an {@link ApiKeyInput}: `{ name, scopes, metadata?,
 * trusted_backend?, expires_at? (RFC 3339 date-time), expires_in_ms?, ai?: { allowed_models?, budgets?:
 * [{ limit_usd, window_ms, window? }], rate_rules?: [{ limit, window_ms, window? }] } }`.
 * @throws BreakwaterError `invalid_payload` (400) naming the first bad field in the body's own terms.
 */
export function readApiKeyBody(body: unknown): ApiKeyInput {
  const data = parse(bodySchema, body, 'body');
  if (data.expires_at != null && data.expires_in_ms !== undefined) {
    throw invalid('expires_at', 'give expires_at or expires_in_ms, not both');
  }
  const ai = data.ai;
  return {
    name: data.name,
    scopes: data.scopes,
    ...(data.metadata === undefined ? {} : { metadata: data.metadata }),
    ...(data.trusted_backend === undefined ? {} : { trustedBackend: data.trusted_backend }),
    ...(data.expires_at == null ? {} : { expiresAt: Date.parse(data.expires_at) }),
    ...(data.expires_in_ms === undefined ? {} : { expiresInMs: data.expires_in_ms }),
    ...(ai == null
      ? {}
      : {
          ai: {
            ...(ai.allowed_models === undefined ? {} : { allowedModels: ai.allowed_models }),
            ...(ai.budgets === undefined
              ? {}
              : {
                  budgets: ai.budgets.map((r) => ({
                    limitUsd: r.limit_usd,
                    windowMs: r.window_ms,
                    window: r.window,
                  })),
                }),
            ...(ai.rate_rules === undefined
              ? {}
              : {
                  rateRules: ai.rate_rules.map((r) => ({
                    limit: r.limit,
                    windowMs: r.window_ms,
                    window: r.window,
                  })),
                }),
          },
        }),
  };
}

function parse<T>(schema: z.ZodType<T>, value: unknown, what: 'input' | 'body'): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.slice(0, 10).map(describeIssue);
  const first = issues[0]!;
  if (first.path === '') {
    throw new BreakwaterError('invalid_payload', {
      message: `The key's ${what} ${first.message}.`,
      details: { reason: 'invalid_key_input', issues },
    });
  }
  throw invalid(first.path, first.message, issues);
}

/** An issue as `{ path, message }`: an unknown field named as the field, a bad record key by its rule. */
function describeIssue(issue: z.core.$ZodIssue): { path: string; message: string } {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    return { path: [...path, issue.keys[0]!].join('.'), message: 'is not a field a key has' };
  }
  if (issue.code === 'invalid_key') {
    return { path: path.join('.'), message: issue.issues[0]?.message ?? issue.message };
  }
  if (path.length === 0) return { path: '', message: `must be a JSON object (${issue.message})` };
  if (issue.code === 'invalid_type' && issue.message.endsWith('received undefined')) {
    return { path: path.join('.'), message: 'is required' };
  }
  return { path: path.join('.'), message: issue.message };
}

function invalid(
  field: string,
  message: string,
  issues: readonly { path: string; message: string }[] = [{ path: field, message }],
): BreakwaterError {
  return new BreakwaterError('invalid_payload', {
    message: `The key's ${field} is invalid: ${message}.`,
    details: { reason: 'invalid_key_input', field, issues },
  });
}

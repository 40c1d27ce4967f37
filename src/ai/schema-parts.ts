/**
 * Zod pieces that the gateway's options (`createAiGateway`) and route definitions (`routes/definition.ts`)
 * share, so a rule name, a window, a scope or a step's retry settings are checked, and described in errors,
 * the same way in both.
 */
import { z } from 'zod';
import { HEADER_BOUNDS } from './request-headers.js';

/** A provider, rule or step name: 1 to 64 of A-Z a-z 0-9 . _ - */
export const nameSchema = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1 to 64 of A-Z a-z 0-9 . _ -');

/** A metadata key, as the `x-breakwater-metadata` header bounds it. */
export const metadataKeySchema = z.string().min(1).max(HEADER_BOUNDS.metadata.maxKeyLength);

/** A limit's window, ms: an integer from 1 ms to 366 days. */
export const windowMsSchema = z
  .number()
  .int()
  .min(1)
  .max(366 * 24 * 3_600_000);

/**
 * What a limit counts per: a provider, a model, a metadata key or the caller (each split per value, or one
 * value only).
 */
export const scopeSchema = z
  .strictObject({
    by: z.enum(['provider', 'model', 'metadata', 'principal']),
    key: metadataKeySchema.optional(),
    value: z.string().min(1).max(HEADER_BOUNDS.metadata.maxValueLength).optional(),
  })
  .refine((s) => (s.by === 'metadata') === (s.key !== undefined), {
    message: "key is required with by: 'metadata' and not allowed otherwise",
  });

/** The fields of a rate rule (requests per window, fixed or sliding). */
export const rateRuleFields = {
  name: nameSchema,
  limit: z.number().int().min(1).max(10_000),
  windowMs: windowMsSchema,
  technique: z.enum(['fixed', 'sliding']),
  scope: scopeSchema,
};

/** A step's timeout and retries, within the bounds of the request headers that override them. */
export const stepSettingsFields = {
  timeoutMs: z.number().int().min(HEADER_BOUNDS.timeoutMs.min).max(HEADER_BOUNDS.timeoutMs.max).optional(),
  maxAttempts: z.number().int().min(1).max(HEADER_BOUNDS.maxAttempts.max).optional(),
  retryDelayMs: z.number().int().min(0).max(HEADER_BOUNDS.retryDelayMs.max).optional(),
  backoff: z.enum(['constant', 'linear', 'exponential']).optional(),
};

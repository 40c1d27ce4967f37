import { indexCatalog, loadCatalog } from './catalog.js';
import type { Product } from './catalog.js';
import { HttpProblem, bodyObject, integerField, invalid, optionalString, usdField } from './problem.js';
import { startService } from './service.js';
import type { ServiceHandle, ServiceOptions } from './service.js';

/** A recommendation request: interest tags (1..20), a budget in USD, an optional recipient name, 1..20 results. */
export interface RecommendationRequest {
  interests: string[];
  budget_usd: number;
  recipient?: string;
  limit?: number;
}

/** One recommended gift: `score` in (0, 1], higher is better; `reason` is a sentence to show a person. */
export interface Recommendation {
  id: string;
  name: string;
  price_usd: number;
  score: number;
  reason: string;
}

/** Default and maximum number of recommendations per request. */
export const DEFAULT_LIMIT = 5;
export const MAX_LIMIT = 20;
const MAX_INTERESTS = 20;

/**
 * Ranks the products of `catalog` for `request`. Only products priced at or under the budget and sharing
 * at least one interest tag qualify. Order: more shared interests first, then the price closest to the
 * budget (the dearest affordable), then id. Interests match case-insensitively. The score,
 * `(shared + price/budget) / (interests + 1)` rounded to 3 decimals, follows the same order.
 */
export function recommendGifts(
  catalog: readonly Product[],
  request: RecommendationRequest,
): Recommendation[] {
  const wanted = normalizeInterests(request.interests);
  const budget = request.budget_usd;
  const ranked = catalog
    .filter((product) => product.price_usd <= budget)
    .map((product) => ({ product, shared: wanted.filter((tag) => product.interests.includes(tag)) }))
    .filter(({ shared }) => shared.length > 0)
    .sort(
      (a, b) =>
        b.shared.length - a.shared.length ||
        b.product.price_usd - a.product.price_usd ||
        (a.product.id < b.product.id ? -1 : a.product.id > b.product.id ? 1 : 0),
    );
  return ranked.slice(0, request.limit ?? DEFAULT_LIMIT).map(({ product, shared }) => ({
    id: product.id,
    name: product.name,
    price_usd: product.price_usd,
    score: Math.round(((shared.length + product.price_usd / budget) / (wanted.length + 1)) * 1000) / 1000,
    reason: reasonFor(shared, product.price_usd, budget, request.recipient),
  }));
}

function normalizeInterests(interests: readonly string[]): string[] {
  return [...new Set(interests.map((tag) => tag.trim().toLowerCase()))];
}

function reasonFor(shared: string[], priceUsd: number, budgetUsd: number, recipient?: string): string {
  const tags = shared.length === 1 ? shared[0] : `${shared.slice(0, -1).join(', ')} and ${shared.at(-1)}`;
  const who = recipient === undefined ? 'Matches' : `For ${recipient}: matches`;
  return `${who} ${tags}; $${priceUsd.toFixed(2)} of the $${budgetUsd.toFixed(2)} budget.`;
}

/** Validates a `POST /recommendations` body. @throws HttpProblem 400 `invalid_request` naming the field. */
export function parseRecommendationRequest(input: unknown): RecommendationRequest {
  const body = bodyObject(input);
  const { interests } = body;
  if (!Array.isArray(interests) || interests.length === 0 || interests.length > MAX_INTERESTS) {
    throw invalid(`interests must be an array of 1 to ${MAX_INTERESTS} strings.`);
  }
  for (const tag of interests) {
    if (typeof tag !== 'string' || tag.trim() === '' || tag.length > 50) {
      throw invalid('Each interest must be a non-empty string of at most 50 characters.');
    }
  }
  const request: RecommendationRequest = {
    interests: interests as string[],
    budget_usd: usdField(body.budget_usd, 'budget_usd'),
    limit: body.limit === undefined ? DEFAULT_LIMIT : integerField(body.limit, 'limit', 1, MAX_LIMIT),
  };
  const recipient = optionalString(body, 'recipient', 100);
  if (recipient !== undefined) request.recipient = recipient;
  return request;
}

/** Options of the gift recommender: where it listens, and the catalog (default: the shipped one). */
export interface GiftServiceOptions extends ServiceOptions {
  catalog?: readonly Product[];
}

/**
 * Starts the gift recommender:
 * - `POST /recommendations` with a {@link RecommendationRequest} → 200 `{ gifts: Recommendation[] }`
 *   (ranked by {@link recommendGifts}; possibly empty); 400 `invalid_request` for a bad body.
 * - `GET /products/:id` → 200 the product, or 404 `product_not_found`.
 * - `/_faults` (see `registerFaults`).
 */
export function startGiftService(options: GiftServiceOptions = {}): Promise<ServiceHandle> {
  const catalog = options.catalog ?? loadCatalog();
  const byId = indexCatalog(catalog);
  return startService('gift', options, (app) => {
    app.post('/recommendations', async (request) => ({
      gifts: recommendGifts(catalog, parseRecommendationRequest(request.body)),
    }));
    app.get<{ Params: { id: string } }>('/products/:id', async (request) => {
      const product = byId.get(request.params.id);
      if (product === undefined) {
        throw new HttpProblem(404, 'product_not_found', `No product has the id "${request.params.id}".`);
      }
      return product;
    });
  });
}

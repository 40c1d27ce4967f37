import { readFileSync } from 'node:fs';

/**
 * A gift product of the GiftGenius catalog. `price_usd` is in US dollars (two decimals); `interests` are the
 * lowercase tags the recommender matches against (for example `coffee`, `hiking`); `category` is for display.
 */
export interface Product {
  id: string;
  name: string;
  price_usd: number;
  category: string;
  interests: string[];
  description: string;
}

let cached: readonly Product[] | undefined;

/**
 * The catalog shipped with the example (`catalog.json`, about 300 products), read once and cached. The same
 * array is returned on every call; callers must not mutate it.
 *
 * @throws Error when `catalog.json` is missing or a product lacks one of its fields.
 */
export function loadCatalog(): readonly Product[] {
  if (cached !== undefined) return cached;
  const text = readFileSync(new URL('./catalog.json', import.meta.url), 'utf8');
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new Error('catalog.json must hold an array of products.');
  parsed.forEach(assertProduct);
  cached = Object.freeze(parsed as Product[]);
  return cached;
}

/** An id → product index over `catalog`. */
export function indexCatalog(catalog: readonly Product[]): ReadonlyMap<string, Product> {
  return new Map(catalog.map((product) => [product.id, product]));
}

function assertProduct(value: unknown, index: number): void {
  const product = value as Partial<Product> | null;
  const ok =
    typeof product === 'object' &&
    product !== null &&
    typeof product.id === 'string' &&
    typeof product.name === 'string' &&
    typeof product.price_usd === 'number' &&
    Number.isFinite(product.price_usd) &&
    product.price_usd > 0 &&
    typeof product.category === 'string' &&
    Array.isArray(product.interests) &&
    product.interests.every((tag) => typeof tag === 'string') &&
    typeof product.description === 'string';
  if (!ok) throw new Error(`catalog.json: product at index ${index} is malformed.`);
}

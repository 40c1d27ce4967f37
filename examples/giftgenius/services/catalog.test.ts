import { describe, expect, it } from 'vitest';
import { indexCatalog, loadCatalog } from './catalog.js';
import {
  CATALOG_INTERESTS,
  CATALOG_SEED,
  CATALOG_SIZE,
  generateCatalog,
  seededRandom,
} from './generate-catalog.js';

describe('catalog.json', () => {
  it('is exactly what the generator makes from the recorded seed', () => {
    expect(loadCatalog()).toEqual(generateCatalog(CATALOG_SEED));
  });

  it('holds 300 products with unique ids and names, cent prices and known interest tags', () => {
    const catalog = loadCatalog();
    expect(catalog).toHaveLength(CATALOG_SIZE);
    expect(CATALOG_SIZE).toBe(300);
    expect(indexCatalog(catalog).size).toBe(300);
    expect(new Set(catalog.map((p) => p.name)).size).toBe(300);
    for (const product of catalog) {
      expect(product.price_usd).toBeGreaterThan(0);
      expect(Math.round(product.price_usd * 100) / 100).toBe(product.price_usd);
      expect(product.interests.length).toBeGreaterThan(0);
      for (const tag of product.interests) expect(CATALOG_INTERESTS).toContain(tag);
    }
    expect(catalog[0]?.id).toBe('p001');
    expect(catalog[299]?.id).toBe('p300');
  });

  it('is returned from cache on later loads', () => {
    expect(loadCatalog()).toBe(loadCatalog());
  });
});

describe('generateCatalog', () => {
  it('depends only on its seed', () => {
    expect(generateCatalog(7)).toEqual(generateCatalog(7));
    expect(generateCatalog(7)).not.toEqual(generateCatalog(8));
  });

  it('draws from a seeded PRNG in [0, 1)', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const draws = Array.from({ length: 1000 }, () => a());
    expect(draws).toEqual(Array.from({ length: 1000 }, () => b()));
    expect(draws.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(new Set(draws).size).toBe(1000);
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadCatalog } from './catalog.js';
import { CATALOG_INTERESTS } from './generate-catalog.js';
import { recommendGifts, startGiftService } from './gift.js';
import type { ServiceHandle } from './service.js';
import { call } from './testing.js';

let gift: ServiceHandle;

beforeEach(async () => {
  gift = await startGiftService();
});

afterEach(async () => {
  await gift.close();
});

const recommend = (body: unknown) => call('POST', `${gift.url}/recommendations`, body);
const ids = (answer: { body: { gifts: { id: string }[] } }) => answer.body.gifts.map((g) => g.id);

describe('POST /recommendations ranking', () => {
  it('ranks one interest by closeness to the budget, dearest affordable first', async () => {
    // Astronomy products at or under $60: p280 57.99, p089 44.99, p282 36.99, p278 32.99, p279 29.99, ...
    const answer = await recommend({ interests: ['astronomy'], budget_usd: 60 });
    expect(answer.status).toBe(200);
    expect(ids(answer)).toEqual(['p280', 'p089', 'p282', 'p278', 'p279']);
    expect(answer.body.gifts[0]).toEqual({
      id: 'p280',
      name: 'Handmade Planetarium Projector',
      price_usd: 57.99,
      score: 0.983,
      reason: 'Matches astronomy; $57.99 of the $60.00 budget.',
    });
  });

  it('puts more shared interests first, then price, then id on a price tie', async () => {
    // Coffee and travel: p008 38.99, p009 26.99, p010 17.99; then one match: p159 39.99, then
    // p119 and p226 both at 38.99 (id order).
    const answer = await recommend({
      interests: ['coffee', 'travel'],
      budget_usd: 40,
      limit: 6,
      recipient: 'Sam',
    });
    expect(ids(answer)).toEqual(['p008', 'p009', 'p010', 'p159', 'p119', 'p226']);
    expect(answer.body.gifts[0]).toEqual({
      id: 'p008',
      name: 'Classic Hand Coffee Grinder',
      price_usd: 38.99,
      score: 0.992,
      reason: 'For Sam: matches coffee and travel; $38.99 of the $40.00 budget.',
    });
    expect(answer.body.gifts[3].score).toBe(0.667);
  });

  it('includes a product priced exactly at the budget and never one above it', async () => {
    expect(ids(await recommend({ interests: ['astronomy'], budget_usd: 57.99, limit: 1 }))).toEqual(['p280']);
    expect(ids(await recommend({ interests: ['astronomy'], budget_usd: 57.98, limit: 1 }))).toEqual(['p089']);
    // 12 travel, coffee or home products cost $25 or less.
    const some = await recommend({ interests: ['travel', 'coffee', 'home'], budget_usd: 25, limit: 20 });
    expect(some.body.gifts.length).toBe(12);
    for (const g of some.body.gifts) expect(g.price_usd).toBeLessThanOrEqual(25);
  });

  it('in process, with every interest, returns exactly the 59 products at or under $25', () => {
    const gifts = recommendGifts(loadCatalog(), {
      interests: [...CATALOG_INTERESTS],
      budget_usd: 25,
      limit: 1000,
    });
    expect(gifts.length).toBe(59);
    expect(gifts.every((g) => g.price_usd <= 25)).toBe(true);
  });

  it('matches interests case-insensitively, ignores repeats, and answers [] when nothing matches', async () => {
    expect(
      ids(await recommend({ interests: [' Astronomy ', 'astronomy'], budget_usd: 60, limit: 2 })),
    ).toEqual(['p280', 'p089']);
    expect((await recommend({ interests: ['astronomy'], budget_usd: 10 })).body).toEqual({ gifts: [] });
    expect((await recommend({ interests: ['sailing'], budget_usd: 500 })).body).toEqual({ gifts: [] });
  });

  it('defaults to 5 results and allows up to 20', async () => {
    expect((await recommend({ interests: ['travel'], budget_usd: 1000 })).body.gifts).toHaveLength(5);
    expect((await recommend({ interests: ['travel'], budget_usd: 1000, limit: 20 })).body.gifts).toHaveLength(
      20,
    );
  });
});

describe('POST /recommendations validation', () => {
  const cases: [string, unknown, string][] = [
    ['no interests', { budget_usd: 50 }, 'interests must be an array of 1 to 20 strings.'],
    ['empty interests', { interests: [], budget_usd: 50 }, 'interests must be an array of 1 to 20 strings.'],
    [
      'a blank interest',
      { interests: ['tea', ' '], budget_usd: 50 },
      'Each interest must be a non-empty string of at most 50 characters.',
    ],
    [
      'a negative budget',
      { interests: ['tea'], budget_usd: -1 },
      'budget_usd must be a number of US dollars above 0 and at most 1000000.',
    ],
    [
      'a budget as text',
      { interests: ['tea'], budget_usd: '50' },
      'budget_usd must be a number of US dollars above 0 and at most 1000000.',
    ],
    ['limit 21', { interests: ['tea'], budget_usd: 50, limit: 21 }, 'limit must be an integer from 1 to 20.'],
    ['limit 0', { interests: ['tea'], budget_usd: 50, limit: 0 }, 'limit must be an integer from 1 to 20.'],
    [
      'limit 2.5',
      { interests: ['tea'], budget_usd: 50, limit: 2.5 },
      'limit must be an integer from 1 to 20.',
    ],
    ['an array body', [1], 'The request body must be a JSON object.'],
  ];
  it.each(cases)('answers 400 problem+json for %s', async (_name, body, detail) => {
    const answer = await recommend(body);
    expect(answer.status).toBe(400);
    expect(answer.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(answer.body).toEqual({
      type: 'https://giftgenius.example/problems/invalid_request',
      title: 'Invalid request',
      status: 400,
      code: 'invalid_request',
      detail,
    });
  });

  it('answers 400 for malformed JSON or plain text and 415 for another media type', async () => {
    const malformed = await call('POST', `${gift.url}/recommendations`, '{"interests":', {
      'content-type': 'application/json',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('invalid_request');
    const text = await call('POST', `${gift.url}/recommendations`, 'tea', { 'content-type': 'text/plain' });
    expect([text.status, text.body.detail]).toEqual([400, 'The request body must be a JSON object.']);
    const xml = await call('POST', `${gift.url}/recommendations`, '<tea/>', {
      'content-type': 'application/xml',
    });
    expect([xml.status, xml.body.code]).toEqual([415, 'unsupported_media_type']);
  });
});

describe('GET /products/:id', () => {
  it('answers the product from the catalog', async () => {
    const answer = await call('GET', `${gift.url}/products/p001`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      id: 'p001',
      name: 'Classic Pour-Over Coffee Kit',
      price_usd: 30.99,
      category: 'kitchen',
      interests: ['coffee', 'cooking'],
      description: 'Dripper, filters and a gooseneck kettle. A dependable classic.',
    });
  });

  it('answers 404 product_not_found for an unknown id and 404 not_found for an unknown route', async () => {
    const missing = await call('GET', `${gift.url}/products/p999`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      type: 'https://giftgenius.example/problems/product_not_found',
      title: 'Product not found',
      status: 404,
      code: 'product_not_found',
      detail: 'No product has the id "p999".',
    });
    const route = await call('GET', `${gift.url}/nowhere?x=1`);
    expect(route.status).toBe(404);
    expect(route.body.detail).toBe('There is no route GET /nowhere.');
  });
});

describe('recommendGifts', () => {
  it('ranks a custom catalog the same way in process', () => {
    const catalog = loadCatalog().filter((p) => ['p001', 'p008', 'p009'].includes(p.id));
    const gifts = recommendGifts(catalog, { interests: ['coffee', 'travel'], budget_usd: 100, limit: 3 });
    expect(gifts.map((g) => [g.id, g.score])).toEqual([
      ['p008', 0.797],
      ['p009', 0.757],
      ['p001', 0.437],
    ]);
  });
});

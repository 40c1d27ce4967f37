import { describe, expect, it } from 'vitest';
import {
  PriceTable,
  costPico,
  estimateMicroUsd,
  formatMicroUsd,
  formatUsd,
  picoPerToken,
  picoToMicro,
  usdToMicro,
} from './pricing.js';

describe('pricing', () => {
  it('holds prices as integer pico-USD per token', () => {
    expect(picoPerToken(2.5)).toBe(2_500_000);
    expect(picoPerToken(0.15)).toBe(150_000);
    expect(picoPerToken(0.000001)).toBe(1);
    const table = new PriceTable({ 'openai/gpt': { inputPerMTok: 0.15, outputPerMTok: 0.6 } });
    expect(table.price('openai', 'gpt')).toEqual({
      inputPico: 150_000,
      outputPico: 600_000,
      cachedPico: 150_000,
    });
    expect(table.price('openai', 'other')).toBeUndefined();
  });

  it('costs usage exactly: uncached, cached and output tokens at their prices', () => {
    const price = { inputPico: 2_500_000, outputPico: 10_000_000, cachedPico: 1_250_000 };
    const pico = costPico({ promptTokens: 1234, completionTokens: 567, cachedTokens: 200 }, price);
    expect(pico).toBe(8_505_000_000);
    expect(formatUsd(pico)).toBe('0.008505');
    // More cached tokens than prompt tokens (a provider's bug) never makes the cost negative.
    expect(costPico({ promptTokens: 10, completionTokens: 0, cachedTokens: 50 }, price)).toBe(12_500_000);
  });

  it('adds up without drift, where floating-point dollars would', () => {
    const price = { inputPico: 100_000, outputPico: 200_000, cachedPico: 100_000 };
    let pico = 0;
    let float = 0;
    for (let i = 0; i < 10_000; i++) {
      pico += costPico({ promptTokens: 1, completionTokens: 1, cachedTokens: 0 }, price);
      float += 0.1e-6 + 0.2e-6;
    }
    expect(formatUsd(pico)).toBe('0.003');
    expect(float).not.toBe(0.003);
  });

  it('formats exact decimals and rounds micro-USD up, budgets down', () => {
    expect(formatUsd(0)).toBe('0');
    expect(formatUsd(150_000)).toBe('0.00000015');
    expect(formatUsd(2_000_000_000_000)).toBe('2');
    expect(formatUsd(1_234_567_890_123)).toBe('1.234567890123');
    expect(formatMicroUsd(2000)).toBe('0.002');
    expect(picoToMicro(1)).toBe(1);
    expect(picoToMicro(1_000_000)).toBe(1);
    expect(picoToMicro(1_000_001)).toBe(2);
    expect(usdToMicro(0.002)).toBe(2000);
    expect(usdToMicro(0.1 + 0.2)).toBe(300_000);
    expect(usdToMicro(0.0000015)).toBe(1);
  });

  it('estimates an upper bound: a token per prompt byte plus framing, and max output tokens', () => {
    const price = { inputPico: 1_000_000, outputPico: 2_000_000, cachedPico: 500_000 };
    // (100 bytes + 2 messages × 4 + 3) × 1 µUSD + 50 × 2 µUSD
    expect(
      estimateMicroUsd({ maxOutputTokens: 50, promptBytes: 100, messageCount: 2 }, price, undefined),
    ).toBe(211);
    expect(
      estimateMicroUsd({ maxOutputTokens: undefined, promptBytes: 100, messageCount: 2 }, price, 5000),
    ).toBe(5000);
    expect(
      estimateMicroUsd({ maxOutputTokens: undefined, promptBytes: 100, messageCount: 2 }, price, undefined),
    ).toBeUndefined();
    // A cached price above the input price (unusual) bounds the input instead.
    const odd = { inputPico: 1_000_000, outputPico: 0, cachedPico: 3_000_000 };
    expect(estimateMicroUsd({ maxOutputTokens: 1, promptBytes: 1, messageCount: 1 }, odd, undefined)).toBe(
      24,
    );
  });
});

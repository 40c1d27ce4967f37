/**
 * Attacks on card-number redaction after identifiers stopped being masked (core/redact.ts: digits of a UUID
 * are an identifier). Both directions: ids Breakwater makes (`newId`) must never change, and real card
 * numbers must still be masked wherever they stand. Written by a fresh tester; the three bugs it found (an id
 * followed by a number, cards after escaped text, cards next to another number) are fixed and tested here.
 */
import { describe, expect, it } from 'vitest';
import { redact, redactText } from '../../src/core/index.js';
import { newId } from '../../src/core/ids.js';

/** Every prefix `newId` is called with in src/ (grep `newId('`), and none (the AI request id). */
const PREFIXES = ['job', 'op', 'whk', undefined] as const;

describe('redactText leaves the ids Breakwater makes alone', () => {
  it.each(PREFIXES)(
    '200 000 ids of prefix %s, alone, in upper case, in a URL, JSON and a log line',
    (prefix) => {
      const changed: string[] = [];
      for (let i = 0; i < 200_000; i++) {
        const id = newId(prefix);
        for (const text of [
          id,
          id.toUpperCase(),
          `/v1/jobs/${id}?attempt=2`,
          JSON.stringify({ id, n: 1 }),
          `job ${id} done`,
          `"${id}"`,
        ]) {
          if (redactText(text) !== text) changed.push(text);
        }
      }
      expect(changed).toEqual([]);
    },
    // 1.2 million texts per prefix: a bound for a loaded machine, not a speed check.
    60_000,
  );

  it('the id of the original bug, and ids whose last groups are all decimal', () => {
    for (const id of [
      'job_01a2379e-5690-726b-b695-03833708259b',
      'job_01a237c2-c071-72fb-94fe-051329557758',
      'op_01A237C2-C071-72FB-9412-051329557758',
      '01a237c2-c071-72fb-9412-051329557758',
    ]) {
      expect(redactText(`id=${id}`)).toBe(`id=${id}`);
      expect(redact({ target: id, nested: [id] })).toEqual({ target: id, nested: [id] });
    }
  });

  // A Luhn-valid stretch that starts in a UUID's last group and runs past its end (`…-051329557758 1`, an
  // attempt number after an id) overlaps the UUID: it is left alone.
  it('an id followed by a separator and a small number is not altered', () => {
    const id = 'job_01a237c2-c071-72fb-94fe-051329557758';
    for (const text of [`${id} 1`, `${id}-1`, `${id}.1`, `retry ${id} 1 of 3`]) {
      expect(redactText(text)).toBe(text);
    }
  });

  it('no generated id followed by " 1", "-1" or ".1" is altered (200 000 job ids)', () => {
    const changed: string[] = [];
    for (let i = 0; i < 200_000; i++) {
      const id = newId('job');
      for (const text of [`${id} 1`, `${id}-1`, `${id}.1`]) if (redactText(text) !== text) changed.push(text);
    }
    expect(changed).toEqual([]);
  });
});

describe('redactText still masks real card numbers', () => {
  const masked: [string, string][] = [
    ['4242424242424242', '************4242'],
    ['4111 1111 1111 1111', '**** **** **** 1111'],
    ['378282246310005', '***********0005'],
    ['5555-5555-5555-4444', '****-****-****-4444'],
    ['4242.4242.4242.4242', '****.****.****.4242'],
  ];
  const contexts: [string, (card: string) => string][] = [
    ['alone', (c) => c],
    ['at the start', (c) => `${c} was charged`],
    ['at the end', (c) => `charged ${c}`],
    ['after =', (c) => `card=${c}`],
    ['after :', (c) => `card:${c}`],
    ['after #', (c) => `#${c}`],
    ['in parentheses', (c) => `(${c})`],
    ['in single quotes', (c) => `'${c}'`],
    ['in double quotes', (c) => `"${c}"`],
    ['between newlines', (c) => `a\n${c}\nb`],
    ['after a tab', (c) => `a\t${c}`],
    ['next to é', (c) => `é${c}é`],
    ['next to Ünïcödé words', (c) => `Kartennummer:Ü${c}ü`],
    ['after a query parameter', (c) => `/pay?number=${c}&x=1`],
    ['in a path', (c) => `/cards/${c}/charge`],
    ['after a comma', (c) => `a,${c},b`],
  ];
  for (const [card, mask] of masked) {
    it.each(contexts)(`${card} %s`, (_name, wrap) => {
      expect(redactText(wrap(card))).toBe(wrap(mask));
    });
  }

  it('inside JSON strings and objects (redact)', () => {
    expect(redactText(JSON.stringify({ note: '4242424242424242' }))).toBe('{"note":"************4242"}');
    expect(redact({ note: 'paid with 4111 1111 1111 1111.' })).toEqual({
      note: 'paid with **** **** **** 1111.',
    });
    expect(redact({ n: 4242424242424242 })).toEqual({ n: '************4242' });
    expect(redact([`x 378282246310005 y`])).toEqual(['x ***********0005 y']);
  });

  // Escaped text puts a letter right before the card (`\n4242…` in JSON, `%3A4242…` in a URL): redactText
  // runs on such text (error messages and stacks in core/log.ts, request paths in upstream.ts and trace.ts).
  const escaped: [string, string, string][] = [
    [
      'a JSON-escaped newline',
      JSON.stringify({ note: 'paid with\n4242424242424242' }),
      '{"note":"paid with\\n************4242"}',
    ],
    ['a JSON-escaped tab', JSON.stringify('card:\t4111111111111111'), '"card:\\t************1111"'],
    ['a URL-encoded colon', '/pay?q=card%3A4242424242424242', '/pay?q=card%3A************4242'],
    ['a URL-encoded =', '/pay?q=number%3D5555555555554444', '/pay?q=number%3D************4444'],
    ['a URL-encoded newline', '/log?line=x%0A378282246310005', '/log?line=x%0A***********0005'],
  ];
  it.each(escaped)('a card after %s is masked', (_name, text, expected) => {
    expect(redactText(text)).toBe(expected);
  });

  // A number within two separators of the card joins its digit run; the card is still found among the
  // run's whole groups (card and expiry, card and CVC, date and card).
  const joined: [string, string][] = [
    ['4242 4242 4242 4242 12/27', '**** **** **** 4242 12/27'],
    ['4111 1111 1111 1111 123', '**** **** **** 1111 123'],
    ['2024-01-01 4242424242424242', '2024-01-01 ************4242'],
    ['item 1. 4242 4242 4242 4242', 'item 1. **** **** **** 4242'],
  ];
  it.each(joined)('a card next to another number is masked: %s', (text, expected) => {
    expect(redactText(text)).toBe(expected);
  });

  it('digits glued to letters or _ are masked too: only a UUID marks digits as an identifier', () => {
    expect(redactText('card4242424242424242')).toBe('card************4242');
    expect(redactText('4242424242424242USD')).toBe('************4242USD');
    expect(redactText('x_4242424242424242')).toBe('x_************4242');
  });
});

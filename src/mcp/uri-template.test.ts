import { describe, expect, it } from 'vitest';
import { parseUriTemplate } from './uri-template.js';

describe('parseUriTemplate', () => {
  it('names the variables once each, in order', () => {
    expect(parseUriTemplate('a://{x}/{+y}{#z}{.e}{/s,t}{;p}{?q,x}').variables).toEqual([
      'x',
      'y',
      'z',
      'e',
      's',
      't',
      'p',
      'q',
    ]);
  });

  it('matches each operator of levels 1 to 3, percent-decoding the values', () => {
    expect(parseUriTemplate('gift://orders/{id}').match('gift://orders/a%20b')).toEqual({ id: 'a b' });
    expect(parseUriTemplate('gift://orders/{id}').match('gift://orders/1/2')).toBeUndefined();
    expect(parseUriTemplate('file:///{+path}').match('file:///docs/a/b.txt')).toEqual({
      path: 'docs/a/b.txt',
    });
    expect(parseUriTemplate('doc://x{#frag}').match('doc://x#top')).toEqual({ frag: 'top' });
    expect(parseUriTemplate('img://logo{.ext}').match('img://logo.png')).toEqual({ ext: 'png' });
    expect(parseUriTemplate('fs://root{/a,b}').match('fs://root/x/y')).toEqual({ a: 'x', b: 'y' });
    expect(parseUriTemplate('m://x{;w,h}').match('m://x;w=2;h=3')).toEqual({ w: '2', h: '3' });
    expect(parseUriTemplate('s://find{?q,lang}').match('s://find?lang=en&q=a%2Bb&other=1')).toEqual({
      lang: 'en',
      q: 'a+b',
    });
    expect(parseUriTemplate('s://find{?q,lang}').match('s://find')).toEqual({});
    expect(parseUriTemplate('p://{a},{b}').match('p://1,2')).toEqual({ a: '1', b: '2' });
  });

  it('does not match a malformed percent-encoding', () => {
    expect(parseUriTemplate('gift://orders/{id}').match('gift://orders/%E0%A4%A')).toBeUndefined();
  });

  it('refuses what levels 1 to 3 cannot say, naming the problem', () => {
    expect(() => parseUriTemplate('a://{x')).toThrow('an unclosed "{" in a://{x');
    expect(() => parseUriTemplate('a://x}')).toThrow('a "}" without its "{" in a://x}');
    expect(() => parseUriTemplate('a://{x*}')).toThrow('level-4 modifiers');
    expect(() => parseUriTemplate('a://{x:3}')).toThrow('level-4 modifiers');
    expect(() => parseUriTemplate('a://{}')).toThrow('a bad variable name "" in a://{}');
    expect(() => parseUriTemplate('a://x{?q}/more')).toThrow('a query expression must end the template');
  });
});

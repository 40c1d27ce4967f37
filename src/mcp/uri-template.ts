/**
 * URI templates as MCP resource templates use them (RFC 6570, levels 1 to 3): parsing, the variable names, and
 * matching a concrete URI back to its variables. Only what a template can say at those levels: simple
 * (`{id}`), reserved (`{+path}`), fragment (`{#frag}`), label (`{.ext}`), path segment (`{/seg}`),
 * path-style parameter (`{;p}`) and query (`{?q,lang}`, `{&page}`) expressions, several variables each; no
 * prefix (`:n`) or explode (`*`) modifiers (level 4).
 */

/** One parsed template. */
export interface UriTemplate {
  /** The template as given. */
  readonly source: string;
  /** Its variable names, in order of appearance, each once. */
  readonly variables: readonly string[];
  /** The variables of `uri` when the template can produce it (values percent-decoded), else undefined. */
  match(uri: string): Record<string, string> | undefined;
}

const OPERATORS = new Set(['+', '#', '.', '/', ';', '?', '&']);
const VARNAME = /^[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*$/;

/** Characters a value may hold, per operator (reserved expansion keeps `/`, the others do not). */
const VALUE: Record<string, string> = {
  '': '[^/?#,&]*',
  '+': '[^?#,]*',
  '#': '[^,]*',
  '.': '[^/?#.,]*',
  '/': '[^/?#,]*',
  ';': '[^/?#;,]*',
};

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Parses a template.
 * @throws RangeError naming the problem: an unclosed or empty expression, a level-4 modifier, a bad variable
 *   name, a literal `{` or `}`, or a query expression (`{?…}`, `{&…}`) before the end of the template.
 */
export function parseUriTemplate(source: string): UriTemplate {
  const variables: string[] = [];
  let pattern = '^';
  const groups: string[] = [];
  const query: string[] = [];
  let rest = source;
  while (rest.length > 0) {
    const open = rest.indexOf('{');
    const close = rest.indexOf('}');
    if (open === -1) {
      if (close !== -1) throw new RangeError(`a "}" without its "{" in ${source}`);
      if (query.length > 0) throw new RangeError(`a query expression must end the template: ${source}`);
      pattern += escapeRegExp(rest);
      break;
    }
    if (close !== -1 && close < open) throw new RangeError(`a "}" without its "{" in ${source}`);
    const end = rest.indexOf('}', open);
    if (end === -1) throw new RangeError(`an unclosed "{" in ${source}`);
    const literal = rest.slice(0, open);
    if (query.length > 0 && literal.length > 0)
      throw new RangeError(`a query expression must end the template: ${source}`);
    pattern += escapeRegExp(literal);
    let body = rest.slice(open + 1, end);
    const operator = OPERATORS.has(body[0] ?? '') ? body[0]! : '';
    body = body.slice(operator.length);
    const names = body.split(',');
    for (const name of names) {
      if (name.endsWith('*') || name.includes(':'))
        throw new RangeError(`level-4 modifiers (":n", "*") are not supported: {${operator}${body}}`);
      if (!VARNAME.test(name)) throw new RangeError(`a bad variable name "${name}" in ${source}`);
      if (!variables.includes(name)) variables.push(name);
    }
    if (operator === '?' || operator === '&') query.push(...names);
    else {
      if (query.length > 0) throw new RangeError(`a query expression must end the template: ${source}`);
      pattern += expression(operator, names, groups);
    }
    rest = rest.slice(end + 1);
  }
  const regex = new RegExp(`${pattern}${query.length > 0 ? '(?:\\?([^#]*))?' : ''}$`);
  return {
    source,
    variables,
    match(uri) {
      const found = regex.exec(uri);
      if (found === null) return undefined;
      const values: Record<string, string> = {};
      try {
        groups.forEach((name, i) => {
          const raw = found[i + 1];
          if (raw !== undefined) values[name] = decodeURIComponent(raw);
        });
        if (query.length > 0) {
          const search = found[groups.length + 1] ?? '';
          for (const pair of search.length > 0 ? search.split('&') : []) {
            const at = pair.indexOf('=');
            const name = decodeURIComponent(at === -1 ? pair : pair.slice(0, at));
            if (query.includes(name) && !(name in values))
              values[name] = at === -1 ? '' : decodeURIComponent(pair.slice(at + 1));
          }
        }
      } catch {
        return undefined; // a malformed percent-encoding: not a URI this template makes
      }
      return values;
    },
  };
}

/** The regular expression of one non-query expression; pushes its capture groups' names. */
function expression(operator: string, names: readonly string[], groups: string[]): string {
  const value = VALUE[operator]!;
  if (operator === ';')
    return names
      .map((name) => {
        groups.push(name);
        return `(?:;${escapeRegExp(name)}(?:=(${value}))?)`;
      })
      .join('');
  const prefix = operator === '+' || operator === '' ? '' : escapeRegExp(operator);
  const separator = operator === '.' || operator === '/' ? escapeRegExp(operator) : ',';
  groups.push(...names);
  return prefix + names.map(() => `(${value})`).join(separator);
}

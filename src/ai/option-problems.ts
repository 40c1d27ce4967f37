/**
 * zod's issues as the options model's problems (`OptionProblem`: the option's path joined with `.`, a rule
 * that follows "must be", the bad value), so the ai layer's zod schemas fail with the same `OptionsError`
 * as every other component: every problem at once, with the component's name.
 */
import type { z } from 'zod';
import type { OptionProblem } from '../core/index.js';

/**
 * One problem per issue of a failed parse of `input` (an unknown key: one per key), in zod's order.
 * @param root names the whole input when an issue has an empty path (`options`).
 */
export function zodProblems(
  issues: readonly z.core.$ZodIssue[],
  input: unknown,
  root = 'options',
): OptionProblem[] {
  const problems: OptionProblem[] = [];
  for (const issue of issues) {
    const path = issue.path.map(String);
    const at = (keys: readonly string[]) => (keys.length === 0 ? root : keys.join('.'));
    if (issue.code === 'unrecognized_keys') {
      const holder = valueAt(input, issue.path);
      for (const key of issue.keys) {
        problems.push({
          option: at([...path, key]),
          rule: 'left out (not an option)',
          value: valueAt(holder, [key]),
        });
      }
    } else if (issue.code === 'invalid_key') {
      // A record key that fails its rule: the key is the bad value, its rule is the inner issue's.
      const inner = issue.issues[0];
      problems.push({
        option: at(path),
        rule: inner === undefined ? 'a valid key' : ruleOf(inner),
        value: path[path.length - 1],
      });
    } else {
      problems.push({ option: at(path), rule: ruleOf(issue), value: valueAt(input, issue.path) });
    }
  }
  return problems;
}

/** What a value must be, in words that follow "must be". */
function ruleOf(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return typeRule(issue.expected);
    case 'too_small':
    case 'too_big':
      return boundRule(issue);
    case 'invalid_value':
      return oneOfRule(issue.values);
    case 'invalid_union': {
      const options = (issue as { options?: unknown[] }).options;
      if (options !== undefined) return oneOfRule(options);
      return 'one of the allowed shapes';
    }
    default:
      return messageRule(issue.message);
  }
}

function typeRule(expected: string): string {
  switch (expected) {
    case 'int':
      return 'an integer';
    case 'object':
    case 'record':
      return 'an object';
    case 'array':
      return 'an array';
    default:
      return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
  }
}

function boundRule(issue: z.core.$ZodIssue & { code: 'too_small' | 'too_big' }): string {
  const small = issue.code === 'too_small';
  const bound = String(small ? issue.minimum : issue.maximum);
  const inclusive = issue.inclusive !== false;
  switch (issue.origin) {
    case 'number':
    case 'int':
    case 'bigint':
      return `a number ${small ? (inclusive ? '>=' : '>') : inclusive ? '<=' : '<'} ${bound}`;
    case 'string':
      if (small && bound === '1') return 'a non-empty string';
      return `a string of at ${small ? 'least' : 'most'} ${bound} characters`;
    case 'array':
      return `a list of at ${small ? 'least' : 'most'} ${bound} entries`;
    default:
      return messageRule(issue.message);
  }
}

/** `'a', 'b' or 'c'`. */
function oneOfRule(values: readonly unknown[]): string {
  const names = values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v)));
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : `${names[0]}`;
}

/** A schema's own message: written as `must be <rule>` where it is a rule, else quoted as a condition. */
function messageRule(message: string): string {
  return message.startsWith('must be ') ? message.slice('must be '.length) : `valid (${message})`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

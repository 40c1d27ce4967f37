/**
 * Redaction of audit data and log lines (docs/operations.md#the-audit-log: authorization headers, secrets,
 * tokens and card-like numbers are never stored). Errs towards hiding: a false positive costs a detail of a
 * record, a false negative leaks a credential into an append-only log that cannot be edited. Used by
 * `operations/audit` (records) and `core/log.ts` (free text in log lines).
 */
import { BreakwaterError } from './errors.js';
import { MAX_JSON_DEPTH } from './json-depth.js';

/** What replaces a secret value. */
export const REDACTED = '[redacted]';

/** What replaces an array or object nested past `MAX_JSON_DEPTH` (whatever it holds, secrets included). */
export const TOO_DEEP = '[too deep]';

/** Words that make an object key secret, whatever the case and separators (`access_token`, `X-Api-Key`, `passwordHash`). */
const SECRET_WORDS = new Set([
  'authorization',
  'auth',
  'cookie',
  'cookies',
  'password',
  'passwords',
  'passwd',
  'passphrase',
  'secret',
  'secrets',
  'token',
  'tokens',
  'jwt',
  'apikey',
  'signature',
  'credential',
  'credentials',
  'cvc',
  'cvc2',
  'cvv',
  'cvv2',
  'pin',
  'otp',
  'ssn',
]);

/** Words that make `token(s)` next to them a count, not a credential (`max_tokens`, `tokens_used`). */
const COUNTS = new Set([
  'max',
  'min',
  'total',
  'prompt',
  'completion',
  'input',
  'output',
  'cached',
  'reasoning',
  'num',
  'used',
  'count',
  'limit',
]);

/** Words that make a following `key` word secret (`api_key`, `privateKey`, `stripe-key`, `client_key`). */
const KEY_QUALIFIERS = new Set([
  'api',
  'private',
  'client',
  'access',
  'signing',
  'encryption',
  'master',
  'session',
  'license',
  'stripe',
  'openai',
]);

/**
 * A run of digit groups joined by one or two spaces, dashes or dots (three break it). A card number is some
 * consecutive groups of a run (see {@link maskCards}).
 */
const DIGIT_RUN = /\d+(?:[ .-]{1,2}\d+)*/g;

/** A UUID (RFC 9562) in its text form: its digits are an id, never a card number, even all-decimal groups. */
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * An HTTP credential in free text: `Bearer <token68>` (RFC 6750) or `Basic <base64>` (RFC 7617), any case,
 * the scheme followed by spaces, or as a URL's query writes the space (`%20`, `+`).
 */
const SCHEME_CREDENTIAL = /\b(bearer|basic)([ \t]+|%20|\+)[A-Za-z0-9\-._~+/]+=*/gi;

/**
 * Credentials recognised by their look, wherever they stand in a text: API keys in their issuers' formats
 * (Stripe `sk_live_…`, `rk_test_…`, `whsec_…`; GitHub `ghp_…`, `gho_…`, `github_pat_…`; Slack `xoxb-…`;
 * Google `AIza…`; AWS access key ids `AKIA…`, `ASIA…`; Breakwater's own `bw_<id>_<secret>`) and JSON Web Tokens (a JWS or JWE in its compact
 * form, RFC 7515 and 7516: `eyJ…` then two or four dot-separated parts). OpenAI's and Anthropic's `sk-…` keys are
 * {@link SK_KEY}.
 */
const CREDENTIAL = new RegExp(
  [
    '\\b[rs]k_(?:live|test)_[A-Za-z0-9]{8,}',
    '\\bwhsec_[A-Za-z0-9+/=]{8,}',
    '\\bgh[opsur]_[A-Za-z0-9]{20,}',
    '\\bgithub_pat_[A-Za-z0-9_]{20,}',
    '\\bxox[abposr]-[A-Za-z0-9-]{10,}',
    '\\bAIza[0-9A-Za-z_-]{30,}',
    '\\b(?:AKIA|ASIA)[0-9A-Z]{16}\\b',
    // Breakwater API keys (http/keys): the secret part is what matters, the id is kept out too.
    '\\bbw_[0-9a-f]{16}_[A-Za-z0-9_-]{43}',
    // JWS `header.payload.signature` (the signature empty when unsigned); JWE has two parts more.
    '\\beyJ[A-Za-z0-9_-]{4,}\\.[A-Za-z0-9_-]*\\.[A-Za-z0-9_-]*(?:\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+)?',
  ].join('|'),
  'g',
);

/**
 * An `sk-` key (OpenAI `sk-…`, `sk-proj-…`; Anthropic `sk-ant-…`; most OpenAI-compatible providers): `sk-`
 * and at least 12 more key characters, one of them a digit (so `sk-learn-pipelines` stays a word).
 */
const SK_KEY = /\bsk-[A-Za-z0-9_-]{12,}/g;

/**
 * Query parameter names that hold a credential in URLs though not in general (`?key=` is Google's API key,
 * `?code=` an OAuth authorization code, `?sig=` a shared access signature): secret as parameters only, next
 * to every name {@link isSecretKey} calls secret.
 */
const SECRET_PARAMETERS = new Set([
  'key',
  'code',
  'sig',
  'hmac',
  'session',
  'sessionid',
  'session_id',
  'sid',
]);

/** Credentials in a URL's authority: `scheme://user:password@host`. */
const URL_USERINFO = /(\b[a-z][a-z0-9+.-]*:\/\/)[^\s/:@]+:[^\s/@]+@/gi;

/** A query or form parameter (`?access_token=…`, `&api_key=…`): its value is redacted when its name is secret. */
const PARAMETER = /([?&;])([^=&;\s#]+)=([^&;\s#]*)/g;

/**
 * A copy of `value` safe to store in the audit log, as JSON (its `toJSON` honoured, so a Date becomes its
 * ISO string; members whose value has no JSON form stay undefined and are left out when serialized):
 * - an object member whose key names a secret becomes `"[redacted]"`, whatever its value (an object or
 *   array too). A key names a secret when one of its words is authorization, auth, cookie(s), password(s),
 *   passwd, passphrase, secret(s), token(s), jwt, apikey, signature, credential(s), cvc, cvc2, cvv, cvv2,
 *   pin, otp or ssn, or when `key` follows api, private, client, access, signing, encryption, master,
 *   session, license, stripe or openai. Words split at `_ - .` spaces and lower-to-upper case changes, so
 *   `set-cookie`, `access_token`, `accessTokens`, `clientSecret`, `X-API-Key`, `privateKey` and
 *   `stripe-signature` are secret; `idempotency_key`, `max_tokens` and `tokens_used` (counts) are not.
 *   Nested objects and arrays are walked;
 * - in every string: an API key in its issuer's format (`sk-…` of OpenAI, Anthropic and most
 *   OpenAI-compatible providers, Stripe `sk_live_…`/`rk_…`/`whsec_…`, GitHub `ghp_…`/`github_pat_…`, Slack
 *   `xox…-`, Google `AIza…`, AWS `AKIA…`) and a JSON Web Token (`eyJ….….…`) become `[redacted]`, wherever
 *   they stand; a `Bearer <token>` or `Basic <credentials>` becomes `Bearer [redacted]` (also written
 *   `Bearer%20…` or `Bearer+…` in a query); a URL's `user:password@` becomes `[redacted]@`; a query
 *   parameter with a secret name (`?access_token=…`; as parameters, also `key`, `code`, `sig`, `hmac`,
 *   `session`, `sessionid`, `session_id`, `sid`) keeps its name with the value redacted; a card number (13–19 digits in whole groups of a digit run, groups
 *   joined by up to two spaces, dashes or dots, passing the Luhn check of ISO/IEC 7812-1, not overlapping
 *   a UUID) keeps its last 4 digits and separators with every other digit replaced by `*`
 *   (`4242 4242 4242 4242` → `**** **** **** 4242`), also next to other numbers (an expiry, a CVC);
 * - an integer number of 13–19 digits passing the Luhn check (or past 2^53, where its digits are rounded)
 *   becomes such a masked string;
 * - an array or object nested past `MAX_JSON_DEPTH` (64) levels becomes `"[too deep]"`: the copy nests at
 *   most 64 levels, so neither this walk nor whatever serializes the copy overflows the stack, and nothing
 *   below the cut is stored.
 *
 * @throws BreakwaterError `invalid_payload` when `value` holds a cycle (within the depth kept).
 */
export function redact(value: unknown): unknown {
  return walk(value, '', new Set(), 1);
}

/** A string with its credentials and card-like numbers masked (see {@link redact}). */
export function redactText(text: string): string {
  return text
    .replace(SCHEME_CREDENTIAL, (_match, scheme: string, space: string) =>
      space === '%20' || space === '+' ? `${scheme}${space}${REDACTED}` : `${scheme} ${REDACTED}`,
    )
    .replace(CREDENTIAL, REDACTED)
    .replace(SK_KEY, (key) => (/\d/.test(key) ? REDACTED : key))
    .replace(URL_USERINFO, `$1${REDACTED}@`)
    .replace(PARAMETER, (match, sep: string, name: string) =>
      isSecretParameter(decodeName(name)) ? `${sep}${name}=${REDACTED}` : match,
    )
    .replace(DIGIT_RUN, maskCards);
}

/** True when a query parameter named `name` holds a secret: a secret key, or `key`, `code`, `sig`, … */
function isSecretParameter(name: string): boolean {
  return SECRET_PARAMETERS.has(name.toLowerCase()) || isSecretKey(name);
}

/**
 * A digit run with its card numbers masked: from each group on, the longest stretch of whole groups that
 * holds 13–19 digits and passes the Luhn check, unless it overlaps a UUID. So a card keeps its mask next to
 * another number (`4242 4242 4242 4242 12/27`, a CVC after it, a date before it), and a longer number is
 * never cut inside a group (`42424242424242424242` is not a card).
 */
function maskCards(run: string, offset: number, text: string): string {
  if (run.length < 13) return run; // most runs (a status, a count, a date): fewer digits than a card
  const groups = run.match(/\d+/g)!;
  let digits = 0;
  for (const group of groups) digits += group.length;
  if (digits < 13) return run;
  const starts: number[] = [];
  for (let i = 0, at = 0; i < groups.length; i++) {
    at = run.indexOf(groups[i]!, at);
    starts.push(at);
    at += groups[i]!.length;
  }
  let out = '';
  let copied = 0;
  for (let i = 0; i < groups.length; i++) {
    let found = -1;
    let count = 0;
    let joined = '';
    for (let j = i; j < groups.length && count + groups[j]!.length <= 19; j++) {
      count += groups[j]!.length;
      joined += groups[j];
      if (count >= 13 && luhn(joined)) found = j;
    }
    if (found === -1) continue;
    const from = starts[i]!;
    const to = starts[found]! + groups[found]!.length;
    if (overlapsUuid(text, offset + from, offset + to)) continue;
    out += run.slice(copied, from) + maskCard(run.slice(from, to));
    copied = to;
    i = found;
  }
  return copied === 0 ? run : out + run.slice(copied);
}

/** Whether `[start, end)` of `text` overlaps a UUID (looked for only when a card number was found). */
function overlapsUuid(text: string, start: number, end: number): boolean {
  for (const uuid of text.matchAll(UUID)) {
    if (uuid.index < end && start < uuid.index + uuid[0].length) return true;
  }
  return false;
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/** True when an object member named `key` holds a secret (see {@link redact}). */
export function isSecretKey(key: string): boolean {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '');
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    // A count of tokens (`max_tokens`, `prompt_tokens`, `tokens_used`) is not a credential.
    if ((word === 'tokens' || word === 'token') && (COUNTS.has(words[i - 1]!) || COUNTS.has(words[i + 1]!))) {
      continue;
    }
    if (SECRET_WORDS.has(word)) return true;
    if (words[i + 1] === 'key' && KEY_QUALIFIERS.has(words[i]!)) return true;
  }
  return false;
}

/** `depth`: the level `value` is at, as an array or object (the top one is 1). */
function walk(value: unknown, key: string, ancestors: Set<object>, depth: number): unknown {
  if (typeof value === 'object' && value !== null) {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = (toJSON as (key: string) => unknown).call(value, key);
  }
  if (typeof value === 'string') return redactText(value);
  if (typeof value === 'number') return cardNumber(value) ?? value;
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof String) return redactText(String(value));
  if (depth > MAX_JSON_DEPTH) return TOO_DEEP;
  if (ancestors.has(value)) {
    throw new BreakwaterError('invalid_payload', { message: 'The audit data contains a cycle.' });
  }
  ancestors.add(value);
  let copy: unknown;
  if (Array.isArray(value)) {
    copy = value.map((item, index) => walk(item, String(index), ancestors, depth + 1));
  } else {
    const out: Record<string, unknown> = {};
    for (const [name, member] of Object.entries(value)) {
      // defineProperty, so a `__proto__` key from parsed JSON stays a plain member.
      const redacted = isSecretKey(name) ? REDACTED : walk(member, name, ancestors, depth + 1);
      Object.defineProperty(out, name, {
        value: redacted,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    copy = out;
  }
  ancestors.delete(value);
  return copy;
}

function cardNumber(value: number): string | undefined {
  if (!Number.isInteger(value) || Math.abs(value) < 1e12) return undefined;
  const digits = String(Math.abs(value));
  if (!/^\d{13,19}$/.test(digits)) return undefined;
  // Past 2^53 the digits are rounded, so the Luhn check says nothing: mask it anyway.
  return !Number.isSafeInteger(value) || luhn(digits) ? maskCard(digits) : undefined;
}

/** Every digit but the last 4 as `*`, separators kept. */
function maskCard(text: string): string {
  let keep = 4;
  const chars = [...text];
  for (let i = chars.length - 1; i >= 0; i--) {
    if (!/\d/.test(chars[i]!)) continue;
    if (keep > 0) keep--;
    else chars[i] = '*';
  }
  return chars.join('');
}

/** The Luhn (mod 10) check of ISO/IEC 7812-1 over a string of digits. */
function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

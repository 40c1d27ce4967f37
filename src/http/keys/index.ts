/**
 * http/keys: Breakwater API keys (docs/security.md#api-keys): the key's text form
 * (`bw_<id>_<secret>`), making and storing keys (hashed), listing and revoking them, and verifying a presented
 * key into the caller's `Principal`, with a short cache. The HTTP edge reads the key from a request and calls
 * {@link ApiKeys.verify}; the CLI (`breakwater keys`) and the admin API (`/admin/api/keys`) manage them.
 */
export {
  API_KEYS_DEFAULTS,
  createApiKeys,
  principalOf,
  type ApiKeys,
  type ApiKeysOptions,
  type CreatedApiKey,
} from './api-keys.js';
export { API_KEY_LENGTH, API_KEY_PATTERN, API_KEY_PREFIX, parseKey } from './format.js';
export {
  AI_LIMIT_BOUNDS,
  MAX_KEY_LIFETIME_MS,
  checkApiKeyInput,
  readApiKeyBody,
  type ApiKeyInput,
} from './input.js';
export { keyState, toApiKeyView, type ApiKeyState, type ApiKeyView } from './view.js';

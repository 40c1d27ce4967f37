import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Folders above core and policy in DESIGN's layout; neither may import them. */
const LATER_FOLDERS = ['store', 'jobs', 'operations', 'webhooks', 'upstream', 'ai', 'mcp', 'server', 'cli'];

/** The capability folders of DESIGN's layout. */
const CAPABILITY_FOLDERS = ['jobs', 'operations', 'webhooks', 'upstream', 'ai'];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // core imports nothing of ours outside core (DESIGN: layout).
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['../*', '../../*'], message: 'core/ imports nothing outside core/.' }] },
      ],
    },
  },
  {
    // store imports only core's public face (DESIGN: layout): not policy, not the capabilities above it.
    files: ['src/store/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/core/*',
                '!**/core/index.js',
                '**/policy',
                '**/policy/**',
                ...LATER_FOLDERS.filter((folder) => folder !== 'store').map((folder) => `**/${folder}`),
                ...LATER_FOLDERS.filter((folder) => folder !== 'store').map((folder) => `**/${folder}/**`),
              ],
              message: 'store/ imports only core/index.js (DESIGN: layout).',
            },
          ],
        },
      ],
    },
  },
  {
    // Capability folders import core, policy and store through their public faces, and not each other.
    files: CAPABILITY_FOLDERS.map((folder) => `src/${folder}/**/*.ts`),
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/core/*',
                '!**/core/index.js',
                '**/policy/*',
                '!**/policy/index.js',
                '**/store/*',
                '!**/store/index.js',
                ...['mcp', 'server', 'cli'].flatMap((folder) => [`**/${folder}`, `**/${folder}/**`]),
              ],
              message: 'capability folders import only core/, policy/ and store/ index.js (DESIGN: layout).',
            },
          ],
        },
      ],
    },
  },
  {
    // policy imports only core's public face, and none of the folders above it.
    files: ['src/policy/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/core/*',
                '!**/core/index.js',
                ...LATER_FOLDERS.map((folder) => `**/${folder}`),
                ...LATER_FOLDERS.map((folder) => `**/${folder}/**`),
              ],
              message: 'policy/ imports only core/index.js (DESIGN: layout).',
            },
          ],
        },
      ],
    },
  },
);

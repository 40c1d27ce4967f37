import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The capability folders (docs/architecture.md#layers-and-folders). */
const CAPABILITY_FOLDERS = ['jobs', 'operations', 'webhooks', 'upstream', 'ai'];

/** The assembling folders, which nothing below them may import. */
const ASSEMBLY_FOLDERS = ['mcp', 'server', 'gateway', 'cli'];

/**
 * A layer rule (imports point down and never up; each row of docs/architecture.md#enforced-by-eslint is one
 * call): files under `files` may reach the folders in `faces` only through their `index.js`, and may not
 * import the folders in `forbidden` at all.
 */
function layer(files, { faces, forbidden, message }) {
  return {
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                // `*.js` and `*/**` rather than `*`, so that a face inside a subfolder can be let through below.
                ...faces.flatMap((folder) => [
                  `**/${folder}/*.js`,
                  `**/${folder}/*/**`,
                  `!**/${folder}/index.js`,
                ]),
                // The store's backends are faces of their own: store/index.js does not re-export them, so
                // that importing it loads no database driver.
                ...(faces.includes('store')
                  ? ['!**/store/sqlite/index.js', '!**/store/postgres/index.js']
                  : []),
                // So is core's tracing, which loads @opentelemetry/api: core/index.js leaves it out.
                ...(faces.includes('core') ? ['!**/core/trace.js'] : []),
                // Relative forms only, so a package path such as `@modelcontextprotocol/sdk/server/…` is not hit.
                ...forbidden.flatMap((folder) =>
                  ['../', '../../'].flatMap((up) => [`${up}${folder}`, `${up}${folder}/**`]),
                ),
              ],
              message,
            },
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', '.cache/', 'test-artifacts/'] },
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
    // core imports nothing of ours outside core.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['../*', '../../*'], message: 'core/ imports nothing outside core/.' }] },
      ],
    },
  },
  layer(['src/policy/**/*.ts'], {
    faces: ['core'],
    forbidden: ['store', ...CAPABILITY_FOLDERS, ...ASSEMBLY_FOLDERS],
    message: 'policy/ imports only core/index.js (docs/architecture.md#enforced-by-eslint).',
  }),
  layer(['src/store/**/*.ts'], {
    faces: ['core'],
    forbidden: ['policy', ...CAPABILITY_FOLDERS, ...ASSEMBLY_FOLDERS],
    message: 'store/ imports only core/index.js (docs/architecture.md#enforced-by-eslint).',
  }),
  // The HTTP edge sits below the capabilities: it knows the caller, not what the caller asks for.
  layer(['src/http/**/*.ts'], {
    faces: ['core', 'store'],
    forbidden: ['policy', ...CAPABILITY_FOLDERS, ...ASSEMBLY_FOLDERS],
    message: 'http/ imports only core/ and store/ index.js (docs/architecture.md#enforced-by-eslint).',
  }),
  layer(
    CAPABILITY_FOLDERS.map((folder) => `src/${folder}/**/*.ts`),
    {
      // http/ is allowed but not listed: ai/ has an http/ folder of its own that the glob would catch.
      faces: ['core', 'policy', 'store'],
      forbidden: ASSEMBLY_FOLDERS,
      message:
        'capability folders import only core/, policy/, store/ and http/ index.js (docs/architecture.md#enforced-by-eslint).',
    },
  ),
  // mcp/ and server/ assemble capabilities, each without the other; only gateway/ (and the entries) sees both.
  layer(['src/mcp/**/*.ts'], {
    faces: ['core', 'policy', 'store', ...CAPABILITY_FOLDERS],
    forbidden: ['server', 'gateway', 'cli'],
    message:
      'mcp/ imports core/, policy/, store/ and capability index.js files, never server/, gateway/ or cli/ (docs/architecture.md#enforced-by-eslint).',
  }),
  layer(['src/server/**/*.ts'], {
    faces: ['core', 'policy', 'store', ...CAPABILITY_FOLDERS],
    forbidden: ['mcp', 'gateway', 'cli'],
    message:
      'server/ imports core/, policy/, store/ and capability index.js files, never mcp/, gateway/ or cli/ (docs/architecture.md#enforced-by-eslint).',
  }),
  // gateway/ is the library that starts a whole process (app, gateway, worker); cli/ parses arguments and
  // calls it, never the other way round.
  layer(['src/gateway/**/*.ts'], {
    faces: [],
    forbidden: ['cli'],
    message:
      'gateway/ never imports cli/: cli/ parses arguments and calls gateway/ (docs/architecture.md#enforced-by-eslint).',
  }),
);

// @ts-check
/**
 * Lint rules of the house: a modest set, chosen to catch what a reviewer misses rather than to restyle code
 * (prettier owns layout). The rules that need type information (floating and misused promises) read the
 * project's tsconfig.json through typescript-eslint's project service. Every `.js` of the product is linted too
 * (the operator page's script, the build script, this file): outside tsconfig.json, so without the typed rules.
 */
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'bench/results/**', 'bench/dist/**', 'docs/**'],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A promise nobody awaits loses its rejection: await it, or end it with `.catch(handler)` where it is
      // fired and forgotten. `void p` says "fire and forget" and is kept for promises that cannot reject (the
      // function catches and logs its own failures); a comment beside it says so.
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: true }],
      // An async function passed where a plain callback is expected (express handlers, event listeners).
      '@typescript-eslint/no-misused-promises': 'error',
      // Unused locals and imports are the compiler's (tsconfig.json noUnusedLocals): one place says it.
      '@typescript-eslint/no-unused-vars': 'off',
      // A `let` assigned once, after a closure that reads it was made (servers handing themselves to handlers).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Stripping control characters from text that arrives is a rule of the house: such regexes are meant.
      'no-control-regex': 'off',
      // Product code names its types: a value that arrives is zod-parsed, a database handle is Kysely<Schema>.
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    // The engine branches on what a channel can do (ChannelCapabilities, declared by its adapter), never on its
    // name: a channel added by the recipe then behaves by what it declares, with no engine change.
    files: ['src/conversation/**', 'src/store/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...['left', 'right'].flatMap((side) => {
          const other = side === 'left' ? 'right' : 'left';
          return [`${side}.name`, `${side}.property.name`].map((channel) => ({
            selector: `BinaryExpression[operator=/^[!=]==?$/][${channel}='channel'][${other}.type='Literal']`,
            message: "Branch on the channel's capabilities (ChannelCapabilities), not on its name.",
          }));
        }),
        {
          selector: "SwitchStatement:matches([discriminant.name='channel'], [discriminant.property.name='channel'])",
          message: "Branch on the channel's capabilities (ChannelCapabilities), not on its name.",
        },
      ],
    },
  },
  {
    // Tests and benchmarks read untyped JSON bodies and poke at internals with `any`.
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Plain JavaScript is outside tsconfig.json: no type information for the typed rules.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // Node scripts: the build script and this file.
    files: ['scripts/**/*.js', '*.js', '*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    // The operator page's script (/ops/ops.js): a classic script in the browser, Chart.js loaded beside it.
    // The `globals` package is not a dependency; the few browser globals it uses are named here.
    files: ['src/ops/page/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        window: 'readonly',
        document: 'readonly',
        fetch: 'readonly',
        CSS: 'readonly',
        URLSearchParams: 'readonly',
        setInterval: 'readonly',
      },
    },
  },
);

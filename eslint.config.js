// @ts-check
/**
 * Lint rules of the house: a modest set, chosen to catch what a reviewer misses rather than to restyle code
 * (prettier owns layout). The rules that need type information (floating and misused promises) read the
 * project's tsconfig.json through typescript-eslint's project service.
 */
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'bench/results/**',
      'bench/dist/**',
      'docs/**',
      '**/*.js',
      '**/*.mjs',
    ],
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
      // Off: tests read untyped JSON bodies with `any`; zod parses every value that arrives in product code.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);

// Lint rules of the project: the recommended sets of ESLint and typescript-eslint, over the
// sources, tests, benchmarks, examples and the consoles' browser scripts.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'docs/api/**', 'node_modules/**', 'test/artifacts/**', 'examples/**/*.versions/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // A leading underscore marks what is there for its position or to be left out of a rest.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
    },
  },
  {
    files: ['**/*.ts'],
    languageOptions: { globals: globals.node },
  },
  {
    files: ['src/**/page/*.js'],
    languageOptions: {
      sourceType: 'script',
      // The placeholders the server fills when it reads the page's files (page-assets/files.ts).
      globals: {
        ...globals.browser,
        __TEXTS__: 'readonly',
        __OUTCOME_LABELS__: 'readonly',
        __OUTCOME_GROUPS__: 'readonly',
        __EXPORT_COLUMNS__: 'readonly',
        __DEFAULT_COLUMNS__: 'readonly',
      },
    },
  },
  {
    // CommonJS where a tool loads its plug-ins with require (mocha's reporter).
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.mjs', 'test/fixtures/**/*.js'],
    languageOptions: { globals: globals.node },
  },
);

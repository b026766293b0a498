// ESLint flat config: typescript-eslint's recommended type-aware rules for the
// service, tests and scripts. Generated types and build output are not linted.
import eslint from '@eslint/js'
import jsdoc from 'eslint-plugin-jsdoc'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {
    ignores: ['dist/**', 'coverage/**', '.tap/**', 'node_modules/**', 'service/generated/**', 'artifacts/**', 'tmp/**'],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // Prettier wraps at 120 but leaves a long string or comment whole; in service/ none may pass 120.
    files: ['service/**/*.ts'],
    rules: { 'max-len': ['error', { code: 120 }] },
  },
  {
    // TSDoc on what service/ exports: its functions, classes and their public methods, and its shapes.
    files: ['service/**/*.ts'],
    ignores: ['service/**/test/**'],
    plugins: { jsdoc },
    rules: {
      'jsdoc/require-jsdoc': [
        'error',
        {
          publicOnly: true,
          require: { FunctionDeclaration: true, ClassDeclaration: true, MethodDefinition: true },
          contexts: ['TSInterfaceDeclaration', 'TSTypeAliasDeclaration'],
          checkConstructors: false,
        },
      ],
    },
  },
  {
    // tap's t.test() returns a promise that tap itself awaits and reports.
    files: ['test/**/*.ts', '**/*.test.ts'],
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', fetch: 'readonly', setTimeout: 'readonly' },
    },
  },
)

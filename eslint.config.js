// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'dist-all/', 'dist-bench/', 'dist-sample/', 'dist-test/', 'dist-test-fleet/', 'dist-chaos/', 'dist-qos/', 'qos-report/', 'coverage/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      // TypeScript checks names itself (typescript-eslint's advice).
      'no-undef': 'off',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  // A file past 400 lines is doing more than one thing: one thing a file, named after it.
  { files: ['lib/**/*.ts'], rules: { 'max-lines': ['error', { max: 400 }] } },
  // The pool's hot path: split with lib/core's rooms (issue 47), measured by the paired bench.
  { files: ['lib/core/connection-pool.ts'], rules: { 'max-lines': 'off' } },
  // The layers: core knows only pools; limits build on core; connectors on core; groups on core and limits; nest on all; the dashboard on nest.
  layer('lib/core/**/*.ts', 'lib/core knows only pools', ['../limits/*', '../nest/*', '../connectors/*', '../groups/*', '../dashboard/*', '../index.js', '@nestjs/*', 'ioredis', 'rxjs']),
  layer('lib/limits/**/*.ts', 'lib/limits builds on lib/core only', ['../nest/*', '../connectors/*', '../groups/*', '../index.js', '@nestjs/*']),
  layer('lib/connectors/**/*.ts', 'lib/connectors build on lib/core only', ['../nest/*', '../limits/*', '../index.js', '../../nest/*', '../../limits/*', '../../groups/*', '../../index.js', '@nestjs/*']),
  layer('lib/groups/**/*.ts', 'lib/groups build on lib/core and lib/limits only', ['../nest/*', '../connectors/*', '../index.js', '@nestjs/*', 'rxjs']),
  layer('lib/nest/**/*.ts', 'lib/nest does not know the dashboard', ['../dashboard/*']),
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', setTimeout: 'readonly', URL: 'readonly' } },
  },
  {
    // The dashboard's page script runs in the browser.
    files: ['lib/dashboard/assets/*.js'],
    languageOptions: { sourceType: 'script', globals: { document: 'readonly', window: 'readonly', EventSource: 'readonly', CSS: 'readonly' } },
  },
);

/** A layer may not import from the layers above it (type-only imports included). */
function layer(files, why, forbidden) {
  return {
    files: [files],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [{ group: forbidden, message: `${why}: move the code, or invert the dependency.` }] }],
    },
  };
}

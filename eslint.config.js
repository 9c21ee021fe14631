// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist*/', // every build and compiled test fixture
      'qos-report/',
      'coverage/',
      'node_modules/',
    ],
  },
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
  // The layers: core knows only pools; limits build on core; connectors on core; groups on core and limits; nest on all; the dashboard on nest.
  ...layer('lib/core/**/*.ts', 'lib/core knows only pools', [
    ...above('limits', 'nest', 'connectors', 'groups', 'dashboard'),
    '@nestjs/*',
    'ioredis',
    'rxjs',
  ]),
  ...layer('lib/limits/**/*.ts', 'lib/limits builds on lib/core only', [
    ...above('nest', 'connectors', 'groups', 'dashboard'),
    '@nestjs/*',
  ]),
  ...layer('lib/connectors/**/*.ts', 'lib/connectors build on lib/core only', [
    ...above('nest', 'limits', 'groups', 'dashboard'),
    '@nestjs/*',
  ]),
  ...layer('lib/groups/**/*.ts', 'lib/groups build on lib/core and lib/limits only', [
    ...above('nest', 'connectors', 'dashboard'),
    '@nestjs/*',
    'rxjs',
  ]),
  ...layer('lib/nest/**/*.ts', 'lib/nest does not know the dashboard', above('dashboard')),
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', setTimeout: 'readonly', URL: 'readonly' } },
  },
  {
    // The dashboard's page script runs in the browser.
    files: ['lib/dashboard/assets/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: { document: 'readonly', window: 'readonly', EventSource: 'readonly', CSS: 'readonly' },
    },
  },
);

/** Import paths into the named top folders of lib, from any depth. */
function above(...folders) {
  return folders.map((f) => `**/${f}/**`);
}

/**
 * A layer may not import from the layers above it (type-only imports included), nor from lib's
 * root entry point, which imports every layer: `../index.js` from a layer's own files,
 * `../../index.js` from its subfolders'.
 */
function layer(files, why, forbidden) {
  const rule = (root) => ({
    '@typescript-eslint/no-restricted-imports': [
      'error',
      { patterns: [{ group: [...forbidden, root], message: `${why}: move the code, or invert the dependency.` }] },
    ],
  });
  const folder = files.replace(/\/\*\*\/\*\.ts$/, '');
  return [
    { files: [`${folder}/*.ts`], rules: rule('../index.js') },
    { files: [`${folder}/*/**/*.ts`], rules: rule('../../index.js') },
  ];
}

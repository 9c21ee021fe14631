/** Jest 30 in ESM mode: NestJS 12 is ESM-only (see DESIGN.md §5). */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    '^nestjs-shared-pool$': '<rootDir>/lib/index.ts',
    '^nestjs-shared-pool/(core|limits|connectors)$': '<rootDir>/lib/$1/index.ts',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  setupFilesAfterEnv: ['<rootDir>/test/support/setup.ts'],
  testTimeout: 20000,
};

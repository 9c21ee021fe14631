/** Jest 30 in ESM mode: NestJS 12 is ESM-only, so Jest must load its tests as ES modules. */

// What any Nest 12 app needs to test in TypeScript with Jest; the README gives it to consumers.
const esm = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' }, // NodeNext imports name .js files; Jest loads the .ts
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
};

/**
 * Specs that judge real timers closely (a fleet of workers and its upstream on this machine's two
 * cores, or adaptive limits that read latencies of a few ms): `npm test` (scripts/test.mjs) runs
 * them after the rest, one at a time, with no other spec beside them.
 */
export const ALONE = [
  'test/limits/adaptive-knee-fleet.spec.ts',
  'test/limits/adaptive-fleet.spec.ts',
  'test/groups/fleet-budget-faults.spec.ts',
  'test/limits/adaptive-shared-probe.spec.ts',
];

// This repository's own: the package's names lead to its sources, one tsconfig, a setup file.
export default {
  ...esm,
  moduleNameMapper: {
    ...esm.moduleNameMapper,
    '^nestjs-shared-pool$': '<rootDir>/lib/index.ts',
    '^nestjs-shared-pool/(core|limits|groups|connectors|dashboard)$': '<rootDir>/lib/$1/index.ts',
    '^nestjs-shared-pool/connectors/(pg|mysql2|ioredis|amqp)$': '<rootDir>/lib/connectors/$1/index.ts',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  setupFilesAfterEnv: ['<rootDir>/test/support/setup.ts'],
  // Starts the services that are down and installs Chromium when they are missing, or stops at once with the command that does.
  globalSetup: '<rootDir>/test/support/prerequisites.mjs',
  testTimeout: 20000,
  // Two files at a time, even on two cores: most of the suite's time is waiting (Redis stalls and
  // restarts, frozen holders, child processes, timers), so one worker left a core idle (11.4 min
  // in one worker on two cores).
  maxWorkers: 2,
};

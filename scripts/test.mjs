#!/usr/bin/env node
// `npm test`: the suite in Jest's two workers, then the specs that judge real timers across
// several processes, alone on the machine. Those run a fleet of processes and read its latency
// and limits on the wall clock; beside another spec in Jest's second worker (an npm install, a
// compile, a busy property test) two cores measure the scheduler, not the limit: CI saw a stall
// past 25 ms every few seconds there, and none alone.
//
// Given a spec (a path or a pattern), it runs one Jest with the arguments as given; given only
// options (`npm test -- --silent`), both runs take them.
import { spawnSync } from 'node:child_process';
import { ALONE } from '../jest.config.js';

const args = process.argv.slice(2);
const jest = (more) =>
  spawnSync(
    process.execPath,
    ['--experimental-vm-modules', '--no-warnings=ExperimentalWarning', 'node_modules/jest/bin/jest.js', ...more],
    { stdio: 'inherit' },
  ).status ?? 1;

if (args.some((a) => !a.startsWith('-'))) process.exit(jest(args));

const pattern = ALONE.map((p) => p.replaceAll('.', '\\.')).join('|');
const together = jest(['--testPathIgnorePatterns', pattern, ...args]);
console.log(`\nAlone on the machine (${ALONE.join(', ')}):\n`);
const alone = jest(['--runInBand', ...args, ...ALONE]);
process.exit(together !== 0 ? together : alone);

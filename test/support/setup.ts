// Fails any test during which an unhandled rejection or uncaught exception happens.
import { afterEach, beforeEach } from '@jest/globals';

const problems: unknown[] = [];
const onProblem = (err: unknown) => {
  problems.push(err);
};

beforeEach(() => {
  problems.length = 0;
  process.on('unhandledRejection', onProblem);
  process.on('uncaughtException', onProblem);
});

afterEach(async () => {
  // Let rejections from the test's last tick surface before looking.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  process.off('unhandledRejection', onProblem);
  process.off('uncaughtException', onProblem);
  if (problems.length > 0) {
    const first = problems[0];
    throw new Error(
      `${problems.length} unhandled rejection(s)/uncaught exception(s) during this test; first: ${
        first instanceof Error ? (first.stack ?? first.message) : String(first)
      }`,
    );
  }
});

import { afterEach } from '@jest/globals';
import type { LoggerService, ModuleMetadata } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';

/** A Nest logger that keeps every line with its level and context. */
export class RecordingNestLogger implements LoggerService {
  readonly lines: { level: string; message: string; context?: string }[] = [];
  #record(level: string, message: unknown, rest: unknown[]): void {
    const context = rest.length > 0 ? String(rest[rest.length - 1]) : undefined;
    this.lines.push({ level, message: String(message), context });
  }
  log(message: unknown, ...rest: unknown[]): void {
    this.#record('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.#record('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.#record('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.#record('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.#record('verbose', message, rest);
  }
}

const open = new Set<TestingModule>();

afterEach(async () => {
  await Promise.all([...open].map((m) => m.close()));
  open.clear();
});

/** Compiles and initialises a testing module; it is closed after the test. */
export async function boot(
  metadata: ModuleMetadata,
  logger: LoggerService = new RecordingNestLogger(),
): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule(metadata).setLogger(logger).compile();
  open.add(moduleRef);
  await moduleRef.init();
  return moduleRef;
}

import { MetricReader } from '@opentelemetry/sdk-metrics';

/** An SDK MetricReader that collects only when a test calls `collect()`, and exports nowhere. */
export class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

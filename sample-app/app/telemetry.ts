// The app's metrics: an OpenTelemetry SDK MeterProvider, read by the Prometheus exporter that
// GET /metrics serves (the exporter opens no port of its own). Every pool records into its meter.
import { Controller, Get, Injectable, Req, Res, type OnApplicationShutdown } from '@nestjs/common';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { IncomingMessage, ServerResponse } from 'node:http';

@Injectable()
export class Telemetry implements OnApplicationShutdown {
  // Nothing to add for the pools' wait, use and create timings: each pool gives the exporter a
  // producer and hands them over at each scrape, instead of recording every value through the SDK
  // (the same histograms, a fraction of the cost).
  readonly exporter = new PrometheusExporter({ preventServerStart: true });
  readonly provider = new MeterProvider({ readers: [this.exporter] });
  /** What the pools record into (`metrics: telemetry.meter`); a global provider works the same. */
  readonly meter = this.provider.getMeter('nestjs-shared-pool-sample');

  async onApplicationShutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}

/** Prometheus text format, for a scraper: `curl localhost:3000/metrics`. */
@Controller('metrics')
export class MetricsController {
  constructor(private readonly telemetry: Telemetry) {}

  @Get()
  scrape(@Req() request: IncomingMessage, @Res() response: ServerResponse): void {
    this.telemetry.exporter.getMetricsRequestHandler(request, response);
  }
}

// On Node 20, `npm ci` warns (EBADENGINE) about dependencies of NestJS 12, of Fastify's inject and
// of the OpenTelemetry SDK 3 that declare Node 22. What of them an app of this library meets is run
// here in a plain Node process of the version under test (the rest of the suite runs Nest on
// Express and Fastify, and records metrics through SDK 3): so the README can say what breaks on 20.
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

function runModule(code: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['--input-type=module', '-e', code],
      { cwd: root, timeout: 30_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout.trim())),
    ),
  );
}

describe(`the engine-flagged dependencies on Node ${process.versions.node}`, () => {
  it("@nestjs/common's FileTypeValidator loads file-type@22 (engines: node >= 22) and tells a PNG from a mislabelled file", async () => {
    const out = await runModule(`
      import { FileTypeValidator } from '@nestjs/common';
      const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
      const validator = new FileTypeValidator({ fileType: 'image/png' });
      const good = await validator.isValid({ mimetype: 'image/png', buffer: png, size: png.length });
      const bad = await validator.isValid({ mimetype: 'image/png', buffer: Buffer.from('%PDF-1.4 not a png'), size: 18 });
      console.log(JSON.stringify({ good, bad }));
    `);
    expect(JSON.parse(out)).toEqual({ good: true, bad: false });
  });

  it('the OpenTelemetry SDK 3 (engines: node >= 22.15) records and exports through the API the pools use', async () => {
    // The pools' own metrics through the SDK run in test/core/metrics.spec.ts under Jest.
    const out = await runModule(`
      import { metrics } from '@opentelemetry/api';
      import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
      const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
      const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
      const provider = new MeterProvider({ readers: [reader] });
      metrics.setGlobalMeterProvider(provider);
      const meter = metrics.getMeter('engines');
      meter.createHistogram('db.client.connection.wait_time', { unit: 's' }).record(0.002, { 'db.client.connection.pool.name': 'p' });
      meter.createObservableGauge('db.client.connection.count').addCallback((o) => o.observe(3, { state: 'idle' }));
      await reader.forceFlush();
      const names = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.descriptor.name)));
      console.log(names.sort().join(' '));
      await provider.shutdown();
    `);
    expect(out).toBe('db.client.connection.count db.client.connection.wait_time');
  });
});

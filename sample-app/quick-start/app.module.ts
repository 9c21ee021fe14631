import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { PoolModule } from 'nestjs-shared-pool';
import { http2Connector } from '../http2-connector.js';
import { CatalogController, CatalogService } from './catalog.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [
    TerminusModule,
    PoolModule.forRoot({
      isGlobal: true,
      httpErrors: true, // pool errors answer 429/503 with Retry-After, never a bare 500
      pools: [
        {
          name: 'upstream',
          connector: http2Connector(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:8443'),
          options: { minSize: 1, maxSize: 4, clientLimit: 100 }, // 4 sessions × 100 streams each
        },
      ],
    }),
  ],
  providers: [CatalogService],
  controllers: [CatalogController, HealthController],
})
export class AppModule {}

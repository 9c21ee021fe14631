import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Http2SessionConnector, PoolModule } from 'nestjs-shared-pool';
import { CatalogController, CatalogService } from './catalog.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [
    TerminusModule,
    PoolModule.forRoot({
      httpErrors: true, // pool errors answer 429/503 with Retry-After, never a bare 500
      pools: [
        {
          name: 'upstream',
          connector: new Http2SessionConnector(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:8443'),
          options: { minSize: 1, maxSize: 4, clientLimit: 100 }, // 4 sessions × up to 100 streams each
        },
      ],
    }),
  ],
  providers: [CatalogService],
  controllers: [CatalogController, HealthController],
})
export class AppModule {}

import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

export async function bootstrap() {
  const app = await NestFactory.create(AppModule);
  app.enableShutdownHooks(); // on SIGTERM, requests in flight finish, then every pool closes
  await app.listen(process.env.PORT ?? 3000);
  return app;
}

// nestjs-shared-pool/connectors/ioredis: Redis through `ioredis` (an optional peer dependency).
export {
  isRedisConnectionError,
  redisConnector,
  sharedRedisConnector,
  type SharedRedisConnectorOptions,
} from './redis-connector.js';

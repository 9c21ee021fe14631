// nestjs-shared-pool/connectors/pg: PostgreSQL through `pg` (an optional peer dependency).
export {
  isPgConnectionError,
  isPgPermanentError,
  pgConnector,
  type PgConnectorOptions,
  type PgReset,
} from './pg-connector.js';
export { asPgPool, type PgPoolAdapterOptions } from './pg-pool-adapter.js';
export {
  typeormDriver,
  type TypeOrmPgDriver,
  type TypeOrmPoolConfig,
  type TypeOrmPoolRoute,
} from './typeorm-driver.js';

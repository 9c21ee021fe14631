// nestjs-shared-pool/connectors/mysql2: MySQL and MariaDB through `mysql2` (an optional peer dependency).
export {
  isMysqlConnectionError,
  mysql2Connector,
  type Mysql2ConnectorOptions,
  type Mysql2Reset,
} from './mysql2-connector.js';

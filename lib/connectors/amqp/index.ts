// nestjs-shared-pool/connectors/amqp: RabbitMQ (AMQP 0-9-1) through `amqplib` (an optional peer dependency).
export { amqpConnector, isAmqpChannelError, type AmqpConnectorOptions } from './amqp-connector.js';

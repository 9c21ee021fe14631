// The sample app's own connectors, for clients the package has none for: each says how to open,
// check and close one client. PostgreSQL comes ready-made (nestjs-shared-pool/connectors/pg).
import { ContainerClient } from '@azure/storage-blob';
import { Redis } from 'ioredis';
import type { Connector } from 'nestjs-shared-pool';

/**
 * Azure Blob `ContainerClient`s. One client serves many callers at once (its HTTP pipeline
 * multiplexes them), so the pool shares each one; `ready()` makes a real round trip (and creates
 * the container), so a bad account or key fails at create.
 */
export function blobContainerConnector(connectionString: string, container: string): Connector<ContainerClient> {
  return {
    clientLimit: 100, // the Azure SDK documents its clients as safe to share: one serves many callers
    create: async () => new ContainerClient(connectionString, container),
    ready: async (client) => {
      await client.createIfNotExists();
    },
    validate: (client) => client.exists(),
    isFatal: (err) => ['ECONNRESET', 'ECONNREFUSED'].includes((err as NodeJS.ErrnoException)?.code ?? ''),
  };
}

/**
 * ioredis connections for the commands that need one to themselves (BLPOP, WATCH/MULTI), pooled
 * with clientLimit 1. Plain commands are better served by one shared auto-pipelined client.
 */
export function redisConnector(url: string): Connector<Redis> {
  return {
    clientLimit: 1, // BLPOP blocks its connection, WATCH is state of it: never shared
    async create(ctx) {
      const client = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => null });
      client.on('error', (err: Error) => ctx.retire(err.message));
      client.on('end', () => ctx.retire('connection ended'));
      await client.connect();
      return client;
    },
    ready: async (client) => {
      await client.ping();
    },
    validate: (client) => client.status === 'ready',
    close: async (client) => {
      await client.quit().catch(() => client.disconnect());
    },
    isFatal: (err) => err instanceof Error && /Connection is closed|ECONNRESET|Stream isn't writeable/.test(err.message),
  };
}

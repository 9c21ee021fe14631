// The sample app's own connectors, for clients the package has none for: each says how to open,
// check and close one client. PostgreSQL and Redis come ready-made (nestjs-shared-pool/connectors/*).
import { ContainerClient } from '@azure/storage-blob';
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

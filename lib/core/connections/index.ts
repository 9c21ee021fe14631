export { ConnectionReset } from './connection-reset.js';
export { ConnectionSupply } from './connection-supply.js';
export type { SharedConnection } from './shared-connection.js';
export { SupplyMember } from './supply-member.js';
export { LeaseHandle, Lender } from './lease-handle.js';

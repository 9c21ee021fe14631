// What the other folders of lib use of this one: its public surface (public.ts), and what follows.
export * from './public.js';
export { checkTarget, connectAbortably, driverOf, ofDriver, type TargetSpec } from './driver-connect.js';

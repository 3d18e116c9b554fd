/**
 * express-access-gateway: composable Express middleware for an access-control gateway.
 *
 * @packageDocumentation
 */
export * from './errors.js';
export type * from './context.js';
export { gatewayContext } from './context.js';
export * from './record/index.js';

/**
 * The gateway as its own server: `serveGateway` (and the `express-access-gateway serve` command).
 *
 * @module
 */
export { serveGateway } from './serve.js';
export type { GatewayServer, ServeOptions, ServerTimeouts } from './serve.js';
export type { AdminAdmissionOptions } from './admission.js';
export type { ServeTlsOptions } from './tls.js';

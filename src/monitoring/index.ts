/**
 * The monitoring console: its router (page and JSON API), the records' queries and exports.
 *
 * @module
 */
export { monitoringConsole } from './router.js';
export type { MonitoringConsoleOptions } from './router.js';

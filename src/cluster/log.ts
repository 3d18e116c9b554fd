/**
 * The cluster's logger, under the `express-access-gateway:cluster` debug namespace (the other
 * areas' loggers come from `src/log.ts`). Never pass a token value to it.
 *
 * @module
 */
import createDebug from 'debug';
import type { Logger } from '../log.js';

/** `DEBUG=express-access-gateway:cluster` shows it. */
export const log: Logger = createDebug('express-access-gateway:cluster');

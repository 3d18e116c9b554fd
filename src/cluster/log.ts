/**
 * The cluster's logger (`DEBUG=express-access-gateway:cluster`). Never pass a token value to it.
 *
 * @module
 */
import { logger, type Logger } from '../log.js';

export const log: Logger = logger('cluster');

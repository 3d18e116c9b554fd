import createDebug from 'debug';

/** The areas that log, each under the `express-access-gateway:<area>` debug namespace. */
export type LogArea = 'token' | 'xacml' | 'authorize' | 'forward' | 'record' | 'console' | 'gateway' | 'relay' | 'config';

/**
 * A `debug` logger for one area. Enable with `DEBUG=express-access-gateway:*`.
 * Never pass a token value to it.
 */
export function logger(area: LogArea): createDebug.Debugger {
  return createDebug(`express-access-gateway:${area}`);
}

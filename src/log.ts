import createDebug from 'debug';

/** The areas that log, each under the `express-access-gateway:<area>` debug namespace. */
export type LogArea =
  | 'token'
  | 'xacml'
  | 'authorize'
  | 'forward'
  | 'record'
  | 'record:postgres'
  | 'console'
  | 'gateway'
  | 'relay'
  | 'config'
  | 'cluster'
  | 'operators'
  | 'configuration';

/**
 * A logger: a `debug` function, typed here so that the published declarations need no `@types/debug`.
 * Never pass a token value to it.
 */
export interface Logger {
  (formatter: string, ...args: unknown[]): void;
  /** Whether the namespace is enabled (check it before building costly arguments). */
  readonly enabled: boolean;
}

/** A `debug` logger for one area. Enable with `DEBUG=express-access-gateway:*`. */
export function logger(area: LogArea): Logger {
  return createDebug(`express-access-gateway:${area}`);
}

/**
 * Traffic control's own errors, thrown at creation and load, never on a request: each has a
 * stable code, and the configuration load turns them into errors with the file's paths.
 *
 * @module
 */

/** The code of {@link TrafficControlError}. */
export const TRAFFIC_CONTROL_INVALID = 'ERR_TRAFFIC_CONTROL_INVALID';
/** The code of {@link TrafficStoreError}. */
export const TRAFFIC_STORE_NEEDS_REDIS = 'ERR_TRAFFIC_STORE_NEEDS_REDIS';

/** One issue of a {@link TrafficControlError}. */
export interface TrafficControlIssue {
  /** Where, for example `trafficControl.policies[0].limit`. */
  readonly path: string;
  /** What is wrong, for example `must be a positive integer`. */
  readonly message: string;
}

/**
 * Traffic control settings or policies that are not valid: every issue, each with its path
 * (`trafficControl.policies[0].limit: must be a positive integer`).
 */
export class TrafficControlError extends TypeError {
  /** Always `ERR_TRAFFIC_CONTROL_INVALID`. */
  readonly code: typeof TRAFFIC_CONTROL_INVALID = TRAFFIC_CONTROL_INVALID;
  /** Every issue found, in order: its path and what is wrong. */
  readonly issues: readonly TrafficControlIssue[];

  constructor(issues: readonly TrafficControlIssue[]) {
    super(`invalid traffic control: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
    this.name = 'TrafficControlError';
    this.issues = Object.freeze([...issues]);
  }
}

/** `store: "redis"` without a Redis connection. */
export class TrafficStoreError extends TypeError {
  /** Always `ERR_TRAFFIC_STORE_NEEDS_REDIS`. */
  readonly code: typeof TRAFFIC_STORE_NEEDS_REDIS = TRAFFIC_STORE_NEEDS_REDIS;
  /** The setting at fault, below the section: `store`. */
  readonly path = 'store';

  constructor() {
    super('traffic control store "redis" needs Redis (a redis URL or connection), or set store to "local"');
    this.name = 'TrafficStoreError';
  }
}

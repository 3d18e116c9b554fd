/**
 * What a store of counts is asked, and what it says: the part shared by the local store and the
 * Redis store, so that the engine builds its decision the same way from either.
 *
 * @module
 */
import type { CompiledTrafficPolicy } from './compile.js';
import type { GroupUsage } from './types.js';

/** One policy's part in a decision: its group, and the limit to apply. */
export interface StoreCheck {
  readonly policy: CompiledTrafficPolicy;
  /** The group's hash (the store key's last part). */
  readonly hash: string;
  /** The group's label, kept for {@link GroupUsage}. */
  readonly group: string;
  /** The limit this decision applies (under `localShare`, this instance's share). */
  readonly limit: number;
}

/** Where one policy stands after the decision. */
export interface CheckResult {
  /** Counted in the window (or in flight), this request included when it was counted. */
  readonly used: number;
  /** Milliseconds until more quota: 0 when there is quota now (and always for `concurrentRequests`). */
  readonly resetMs: number;
  /** Past its limit: refused (`enforce`), or a warning (`warningOnly`). */
  readonly exceeded: boolean;
}

/**
 * The store's verdict over every policy of a request. Enforced policies are checked first; only
 * when all have room is the request counted in every policy. `warningOnly` `requests` policies
 * count every request; in-flight slots are taken only by an allowed request (a refused one is not
 * in flight).
 */
export interface StoreVerdict {
  readonly allowed: boolean;
  /** One per check, in the same order. */
  readonly results: readonly CheckResult[];
  /** Frees the in-flight slots taken. Idempotent. */
  readonly release: () => void;
}

/** Nothing to free. */
export const NOTHING_TO_RELEASE = (): void => undefined;

/**
 * A store shared by every instance (Redis). `undefined` from {@link SharedStore.take} means it
 * could not be reached in time: the decision then follows `onStoreUnavailable`.
 */
export interface SharedStore {
  /** `alive`: whether the exchange still exists (its in-flight slots' leases are renewed only while it does). */
  take(checks: readonly StoreCheck[], alive?: () => boolean): Promise<StoreVerdict | undefined>;
  usage(policy: CompiledTrafficPolicy, top: number): Promise<GroupUsage[] | undefined>;
  close(): Promise<void>;
}

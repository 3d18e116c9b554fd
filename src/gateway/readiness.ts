/**
 * The readiness of a gateway: each token policy in force checked against its authorization server
 * (`TokenPolicy.check`) once `ready()` asked for it, a failing one checked again with a backoff
 * (and at once when the watch sees its server back), so that `<basePath>/health/ready` answers 503
 * while a server is misconfigured or down and 200 once it is fixed.
 *
 * @module
 */
import type { ConfigIssue } from '../config/errors.js';
import type { GatewayLogger } from '../log.js';
import type { TokenPolicy, TokenPolicyCheck } from '../token/policy.js';

/** The last check of one token policy. */
export interface TokenPolicyCheckResult {
  /** The token policy. */
  readonly policy: string;
  /** Whether its authorization server answered as configured. */
  readonly ok: boolean;
  /** Why not (`discovery: ... HTTP 404`, `introspection: ... (HTTP 401, invalid_client)`). */
  readonly cause?: string;
}

/** What {@link Gateway.check} found in the configuration in force. */
export interface GatewayCheck {
  /** Every token policy passed its check (warnings do not count). */
  readonly ok: boolean;
  /** Each token policy in force, checked now. */
  readonly tokenPolicies: readonly TokenPolicyCheckResult[];
  /** What loads but is likely wrong (a policy's designator the gateway never fills), with its path. */
  readonly warnings: readonly ConfigIssue[];
}

/** The gateway's readiness now (what `<basePath>/health/ready` answers). */
export interface GatewayHealth {
  /** A configuration is in force and, once `ready()` started them, every token policy check passes. */
  readonly ready: boolean;
  /** The last check of each token policy in force (empty before `ready()`). */
  readonly tokenPolicies: readonly TokenPolicyCheckResult[];
}

/** Delays of the checks again of a failing policy: from the first, doubled up to the last. */
export interface CheckBackoff {
  readonly minMs: number;
  readonly maxMs: number;
}

interface Entry {
  result: TokenPolicyCheck | undefined;
  /** It replaced a policy of the same name whose last check failed (a reload that fixes it). */
  replacesFailing: boolean;
  running: Promise<void> | undefined;
  timer: NodeJS.Timeout | undefined;
  delayMs: number;
}

/** The checks of the token policies in force. Off (everything ready) until {@link start}. */
export class TokenPolicyChecks {
  readonly #log: GatewayLogger | undefined;
  readonly #backoff: CheckBackoff;
  readonly #entries = new Map<TokenPolicy, Entry>();
  readonly #changed: (() => void) | undefined;
  #on = false;
  #closed = false;

  /** `changed`: told after each result and each change of the policies tracked (readiness may have changed). */
  constructor(log: GatewayLogger | undefined, backoff: CheckBackoff, changed?: () => void) {
    this.#log = log;
    this.#backoff = backoff;
    this.#changed = changed;
  }

  /** Whether the checks run (after `ready()`). */
  get started(): boolean {
    return this.#on;
  }

  /** Turns the checks on and checks the policies in force; resolves once each has a result. */
  async start(policies: Iterable<TokenPolicy>): Promise<void> {
    this.#on = true;
    await this.track(policies);
  }

  /**
   * The policies now in force: new ones are checked, retired ones forgotten. Resolves once each has
   * a result. Nothing while the checks are off.
   */
  async track(policies: Iterable<TokenPolicy>): Promise<void> {
    if (!this.#on || this.#closed) return;
    const live = new Set(policies);
    // A policy a reload replaced (a new secret makes a new policy of the same name): its successor
    // passing is the recovery docs/deployment.md ("Readiness: the token policies' checks") promises a line for.
    const failing = new Set<string>();
    for (const [policy, entry] of this.#entries)
      if (!live.has(policy)) {
        if (entry.result?.ok === false || entry.replacesFailing) failing.add(policy.name);
        clearTimeout(entry.timer);
        this.#entries.delete(policy);
      }
    const waits: Array<Promise<void> | undefined> = [];
    for (const policy of live) {
      let entry = this.#entries.get(policy);
      if (entry === undefined) {
        entry = {
          result: undefined,
          replacesFailing: failing.has(policy.name),
          running: undefined,
          timer: undefined,
          delayMs: this.#backoff.minMs,
        };
        this.#entries.set(policy, entry);
        this.#run(policy, entry);
      }
      waits.push(entry.running);
    }
    this.#changed?.();
    await Promise.all(waits);
  }

  /** Checks a failing policy again now (its server answered a call). */
  recheck(policy: TokenPolicy): void {
    const entry = this.#entries.get(policy);
    if (entry === undefined || entry.result?.ok !== false || entry.running !== undefined) return;
    clearTimeout(entry.timer);
    this.#run(policy, entry);
  }

  /** Every policy tracked passed its last check (always, while the checks are off). */
  ok(): boolean {
    if (!this.#on) return true;
    for (const entry of this.#entries.values()) if (entry.result?.ok !== true) return false;
    return true;
  }

  /** The last result of each policy tracked. */
  results(): TokenPolicyCheckResult[] {
    return [...this.#entries]
      .filter(([, entry]) => entry.result !== undefined)
      .map(([policy, { result }]) => ({ policy: policy.name, ...result! }));
  }

  /** Stops the checks to come. */
  close(): void {
    this.#closed = true;
    for (const entry of this.#entries.values()) clearTimeout(entry.timer);
    this.#entries.clear();
  }

  #run(policy: TokenPolicy, entry: Entry): void {
    entry.timer = undefined;
    entry.running = policy.check().then((result) => {
      entry.running = undefined;
      if (this.#closed || this.#entries.get(policy) !== entry) return;
      this.#settle(policy, entry, result);
    });
  }

  #settle(policy: TokenPolicy, entry: Entry, result: TokenPolicyCheck): void {
    const before = entry.result;
    entry.result = result;
    if (result.ok) {
      entry.delayMs = this.#backoff.minMs;
      if (before?.ok === false || (before === undefined && entry.replacesFailing))
        this.#log?.info({ event: 'token_policy_ready', policy: policy.name }, `token policy ${policy.name}: check passed`);
      entry.replacesFailing = false;
      this.#changed?.();
      return;
    }
    entry.replacesFailing = false;
    if (before?.ok !== false || before.cause !== result.cause)
      this.#log?.error(
        { event: 'not_ready', policy: policy.name, cause: result.cause },
        `not ready: token policy ${policy.name}: ${result.cause} (checked again in ${Math.round(entry.delayMs / 1000)} s)`,
      );
    entry.timer = setTimeout(() => this.#run(policy, entry), entry.delayMs);
    entry.timer.unref();
    entry.delayMs = Math.min(entry.delayMs * 2, this.#backoff.maxMs);
  }
}

/** The gateway's readiness, and the promises of `Gateway.whenReady` waiting for it. */
export class Readiness {
  readonly #ready: () => boolean;
  #waiting: Array<() => void> = [];

  /** `ready`: whether the gateway is ready now (a configuration in force, every check passing). */
  constructor(ready: () => boolean) {
    this.#ready = ready;
  }

  now(): boolean {
    return this.#ready();
  }

  /** Resolves the first time the gateway is ready: at once when it is now. */
  reached(): Promise<void> {
    return this.#ready() ? Promise.resolve() : new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Told when readiness may have changed (a check's result, a configuration compiled). */
  changed(): void {
    if (this.#waiting.length === 0 || !this.#ready()) return;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const resolve of waiting) resolve();
  }
}

/** How often a failing policy is checked again: after 5 s, then twice as late each time, at most every 30 s. */
export const CHECK_BACKOFF: CheckBackoff = { minMs: 5_000, maxMs: 30_000 };

/** Checks every policy now (not the readiness's last results): what {@link Gateway.check} answers. */
export async function checkNow(runtime: {
  readonly tokenPolicies: ReadonlyMap<string, TokenPolicy>;
  readonly warnings: readonly ConfigIssue[];
}): Promise<GatewayCheck> {
  const warnings = runtime.warnings;
  const tokenPolicies = await Promise.all(
    [...new Set(runtime.tokenPolicies.values())].map(async (policy) => ({ policy: policy.name, ...(await policy.check()) })),
  );
  return { ok: tokenPolicies.every((result) => result.ok), tokenPolicies, warnings: [...warnings] };
}

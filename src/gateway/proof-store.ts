/**
 * The gateway's store of DPoP proof identifiers when it has no Redis (this process's memory, or
 * the primary's under `serve --workers`), watched as a dependency (docs/deployment.md,
 * "Dependencies: what the operator sees"): a proof the store could not remember (full, or the
 * primary did not answer) puts `proof_store` down, said once; the next one it remembers puts it
 * back up. On Redis, the `redis` dependency says the same.
 *
 * @module
 */
import type { DependencyStates } from '../observability/dependencies.js';
import type { DpopReplayStore, ProofMemory } from '../token/binding/replay.js';

const WITHOUT_PROOF_STORE = 'DPoP proofs are refused with 503 ERR_PROOF_STORE_UNAVAILABLE until it remembers one again';

/** `store`, its failures and recoveries told to `states` as `proof_store`. */
export function watchedProofStore(store: DpopReplayStore, states: DependencyStates): DpopReplayStore {
  const said = (memory: ProofMemory): ProofMemory => {
    if (memory === undefined) states.down('proof_store', store.unavailable ?? 'it did not answer', WITHOUT_PROOF_STORE);
    else states.up('proof_store');
    return memory;
  };
  return {
    remember(key, ttlMs, owner) {
      const memory = store.remember(key, ttlMs, owner);
      return memory instanceof Promise ? memory.then(said) : said(memory);
    },
    get unavailable() {
      return store.unavailable;
    },
  };
}

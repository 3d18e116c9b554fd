/**
 * Decisions remembered per token. A compiled policy's decision is a pure function of the
 * attributes it reads. When it reads no environment attribute (the clock), no request document
 * (selectors, XPath) and nothing from an attribute finder, every request with the same cached
 * token and the same values of the few invocation attributes it reads gets the same decision:
 * `xacmlAuthorize` evaluates it once and reuses it, instead of building a request context and
 * evaluating the policy on every request.
 *
 * @module
 */
import type { TokenContext } from '../context.js';
import { heapBytes } from '../token/heap-bytes.js';
import { chargeTokenData, memoPerToken } from '../token/validated-data.js';
import type { Pdp } from '../xacml/index.js';
import { XacmlAttributes as A } from './attributes.js';
import type { AttributeSelection } from './request-builder.js';

/** The invocation values a policy's decision depends on, besides the token: the parts of the key. */
export interface DecisionKeyPlan {
  /** The operation (`action-id`, `org:gateway:action:action`). */
  readonly operation: boolean;
  /** The service name (`org:gateway:action:service`). */
  readonly service: boolean;
  /** The provider name (`org:gateway:action:provider`). */
  readonly provider: boolean;
  /** The invocation URL, host included (`org:gateway:action:url`). */
  readonly url: boolean;
  /** The request target, path and query (`resource-id`, URL parameters). */
  readonly target: boolean;
  /** Lower-case names of the request headers read (transport headers, `soapAction`). */
  readonly headers: readonly string[];
}

/** Most decisions remembered per token (different operations, paths...); then they start over. */
const MAX_KEYS_PER_TOKEN = 256;

/** A decision's map entry (three words and a bucket share); the decision itself is shared. */
const DECISION_ENTRY_BYTES = 32;

/**
 * The key plan of a compiled policy, or `undefined` when its decisions cannot be reused: it reads
 * the whole request (`selection` undefined), the clock (environment attributes), or the caller's
 * own subject information (`customSubject`: its values come from a function of the request).
 */
export function decisionKeyPlan(
  selection: AttributeSelection | undefined,
  excluded: ReadonlySet<string>,
  customSubject: boolean,
): DecisionKeyPlan | undefined {
  if (selection === undefined || selection.environment.size > 0) return undefined;
  if (customSubject && [A.subjectId, A.organization, A.client, A.credential, A.role].some((id) => selection.subject.has(id)))
    return undefined;
  const action = selection.action;
  const headers = new Set<string>();
  let target = selection.resource.has(A.resourceId);
  for (const id of action) {
    if (id.startsWith(A.urlParameterPrefix)) target = true;
    else if (id.startsWith(A.headerPrefix)) headers.add(id.slice(A.headerPrefix.length));
  }
  if (action.has(A.soapAction)) headers.add('soapaction');
  for (const name of excluded) headers.delete(name);
  return {
    operation: action.has(A.actionId) || action.has(A.action),
    service: action.has(A.service),
    provider: action.has(A.provider),
    url: action.has(A.url),
    target,
    headers: [...headers],
  };
}

/**
 * One part of a decision key, prefixed by its length so that the concatenation of parts is
 * unambiguous whatever the values hold; an absent value (a missing header) is marked as such.
 */
export function keyPart(part: string | readonly string[] | undefined): string {
  if (part === undefined) return '-';
  if (typeof part === 'string') return `${part.length}:${part}`;
  let key = `${part.length}[`;
  for (const value of part) key += `${value.length}:${value}`;
  return key;
}

/** Remembered decisions: per compiled policy, per cached token result, per key. */
export class DecisionMemo<T> {
  private readonly byPdp = new WeakMap<Pdp, (token: TokenContext | undefined) => Map<string, T>>();

  /**
   * The decisions of one token under one policy (collected with either). Call it for a token that
   * holds its policy's shared result: for any other, the slot is a new one each time.
   */
  slot(pdp: Pdp, token: TokenContext | undefined): Map<string, T> {
    let slots = this.byPdp.get(pdp);
    if (slots === undefined) {
      slots = memoPerToken(() => new Map<string, T>());
      this.byPdp.set(pdp, slots);
    }
    return slots(token);
  }

  /**
   * Remembers a decision, starting the slot over when it is full; its key is counted in the token
   * cache's byte bound (a slot started over keeps its count: the bound errs high).
   */
  static remember<T>(token: TokenContext | undefined, slot: Map<string, T>, key: string, value: T): void {
    if (slot.size >= MAX_KEYS_PER_TOKEN) slot.clear();
    else if (!slot.has(key)) chargeTokenData(token, DECISION_ENTRY_BYTES + heapBytes(key));
    slot.set(key, value);
  }
}

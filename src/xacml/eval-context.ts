/**
 * The state of one evaluation: the request, the bags already resolved (one slot per distinct
 * designator/selector of the PDP), the request document for XPath (built on first use) and the
 * instant used for current-time/date/dateTime (read once).
 *
 * @module
 */
import type { RequestAttribute, RequestContext } from './request-context.js';
import { requestDocument } from './xpath.js';
import type { XPathDocument } from './xpath.js';

/** An attribute source for attributes the request lacks (see `createPdp`). */
export type AttributeFinder = (q: {
  category: 'subject' | 'resource' | 'action' | 'environment';
  attributeId: string;
  dataType: string;
  issuer?: string;
  subjectCategory?: string;
}) => string[] | undefined;

/** What the PDP gives every evaluation. */
export interface PdpRuntime {
  readonly attributeFinder: AttributeFinder | undefined;
  readonly now: () => Date;
}

/** The instant of one `evaluate` call, shared by all its individual evaluations. */
export interface Clock {
  date?: Date;
}

/** Above this many attributes in a section, lookups go through a Map built on first use. */
const INDEX_THRESHOLD = 16;

/** Per-evaluation state. */
export class EvalContext {
  /** Resolved bags, by slot number. */
  readonly slots: Array<readonly unknown[] | undefined>;
  private doc: XPathDocument | undefined;
  private indexes: Map<readonly RequestAttribute[], Map<string, RequestAttribute[]>> | undefined;

  constructor(
    /** The request (one individual request for hierarchical resources). */
    readonly request: RequestContext,
    readonly runtime: PdpRuntime,
    nSlots: number,
    private readonly clock: Clock,
  ) {
    this.slots = new Array<readonly unknown[] | undefined>(nSlots);
  }

  /** The evaluation instant, read from the clock once. */
  now(): Date {
    return (this.clock.date ??= this.runtime.now());
  }

  /** The request document for AttributeSelectors and the XPath functions, built once. */
  document(): XPathDocument {
    return (this.doc ??= requestDocument(this.request));
  }

  /**
   * Calls `visit` for each request attribute of the category with that id (subject attributes
   * only from subjects of `subjectCategory`; attributes of several elements of one category merge).
   */
  forEach(category: 'subject' | 'resource' | 'action' | 'environment', attributeId: string, subjectCategory: string, visit: (a: RequestAttribute) => void): void {
    const r = this.request;
    switch (category) {
      case 'subject':
        for (const s of r.subjects) {
          if (s.subjectCategory === subjectCategory) this.scan(s.attributes, attributeId, visit);
        }
        return;
      case 'resource':
        if (r.resources.length === 1) this.scan(r.resources[0]!.attributes, attributeId, visit);
        else for (let i = 0; i < r.resources.length; i++) this.scan(r.resources[i]!.attributes, attributeId, visit);
        return;
      case 'action':
        this.scan(r.action.attributes, attributeId, visit);
        return;
      default:
        this.scan(r.environment.attributes, attributeId, visit);
    }
  }

  private scan(attrs: readonly RequestAttribute[], attributeId: string, visit: (a: RequestAttribute) => void): void {
    if (attrs.length <= INDEX_THRESHOLD) {
      for (const a of attrs) if (a.attributeId === attributeId) visit(a);
      return;
    }
    // A large section is indexed by attribute id once per evaluation.
    const indexes = (this.indexes ??= new Map());
    let index = indexes.get(attrs);
    if (index === undefined) {
      index = new Map();
      for (const a of attrs) {
        const list = index.get(a.attributeId);
        if (list) list.push(a);
        else index.set(a.attributeId, [a]);
      }
      indexes.set(attrs, index);
    }
    const list = index.get(attributeId);
    if (list) for (const a of list) visit(a);
  }
}

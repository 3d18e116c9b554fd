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
  /** Most attribute values of a request read as a document by XPath (see `createPdp`). */
  readonly maxXPathAttributes: number;
}

/** The instant of one `evaluate` call, shared by all its individual evaluations. */
export interface Clock {
  date?: Date;
}

/** Above this many attributes in a section, lookups go through a Map built on first use. */
const INDEX_THRESHOLD = 16;
const NONE: readonly RequestAttribute[] = Object.freeze([]);

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
    return (this.doc ??= requestDocument(this.request, this.runtime.maxXPathAttributes));
  }

  /**
   * The request attributes of the category with that id (subject attributes only from subjects
   * of `subjectCategory`; attributes of several elements of one category merge). Returns a
   * shared empty array when there is none. No closure is created: this runs per designator and
   * evaluation.
   */
  attributes(
    category: 'subject' | 'resource' | 'action' | 'environment',
    attributeId: string,
    subjectCategory: string,
  ): readonly RequestAttribute[] {
    const r = this.request;
    switch (category) {
      case 'subject': {
        let out: RequestAttribute[] | undefined;
        for (const s of r.subjects) {
          if (s.subjectCategory === subjectCategory) out = this.scan(s.attributes, attributeId, out);
        }
        return out ?? NONE;
      }
      case 'resource': {
        let out: RequestAttribute[] | undefined;
        for (const res of r.resources) out = this.scan(res.attributes, attributeId, out);
        return out ?? NONE;
      }
      case 'action':
        return this.scan(r.action.attributes, attributeId, undefined) ?? NONE;
      default:
        return this.scan(r.environment.attributes, attributeId, undefined) ?? NONE;
    }
  }

  private scan(
    attrs: readonly RequestAttribute[],
    attributeId: string,
    out: RequestAttribute[] | undefined,
  ): RequestAttribute[] | undefined {
    if (attrs.length <= INDEX_THRESHOLD) {
      for (let i = 0; i < attrs.length; i++) {
        const a = attrs[i]!;
        if (a.attributeId === attributeId) (out ??= []).push(a);
      }
      return out;
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
    if (list) for (const a of list) (out ??= []).push(a);
    return out;
  }
}

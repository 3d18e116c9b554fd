/**
 * XPath 1.0 over the request context (XACML 2.0 section 5.31 `AttributeSelector` and A.3.15
 * `xpath-node-count`, `xpath-node-equal`, `xpath-node-match`).
 *
 * The request is serialized to an XACML 2.0 context document (namespace
 * `urn:oasis:names:tc:xacml:2.0:context:schema:os`) and parsed with `@xmldom/xmldom` once per
 * evaluation, only when a policy needs it. Expressions are evaluated with the `<Request>` element
 * as context node and the namespace prefixes in scope in the policy. An expression is parsed
 * once per (namespace map, expression): the parsed form is cached in a `WeakMap` keyed by the
 * namespace map object, so it lives exactly as long as the compiled policy that owns that map.
 *
 * Every header of a gateway invocation is an attribute of its request, so the document grows
 * with what the caller sends. Two measures keep that from costing each request (and those
 * waiting behind it) time in proportion:
 *  - the selectors that read one attribute by id (`//Attribute[@AttributeId='…']/AttributeValue`
 *    and its forms, see {@link directSelector}) are answered from the request context itself,
 *    without any document, and name the attribute they read (so a request builder can leave
 *    the others out);
 *  - for every other expression, a document of more than `maxAttributes` attribute values is
 *    not built: the expression is a processing error (Indeterminate, fail closed).
 *
 * @module
 */
import { createRequire } from 'node:module';
import { DOMParser, type Document, type Element, type Node } from '@xmldom/xmldom';
import type { RequestAttribute, RequestContext } from './request-context.js';
import { CONTEXT_NS } from './constants.js';
import { XacmlProcessingError } from './errors.js';

/** A parsed request context document, ready for XPath (opaque to callers). */
export interface XPathDocument {
  /** The parsed document. */
  readonly document: Document;
  /** Its `<Request>` element: the context node of every expression. */
  readonly request: Element;
}

/** Namespace prefix → URI, as in scope where the expression appears in the policy. */
export type XPathNamespaces = Readonly<Record<string, string>>;

// The `xpath` package's own typings pull the DOM lib into the whole program; this is the small
// part of its API we use (`parse` is exported at runtime but missing from its .d.ts).
interface XPathEvaluator {
  evaluate(options: { node: Node; namespaces: XPathNamespaces }): XPathResultValue;
}
interface XPathResultValue {
  /** Throws when the result is a string, number or boolean. */
  nodeset(): { toArray(): Node[] };
  stringValue(): string;
}
interface XPathModule {
  parse(expression: string): XPathEvaluator;
}
const xpath = createRequire(import.meta.url)('xpath') as XPathModule;

function escapeXml(s: string): string {
  return s.replace(/[<>&"\r\n\t]/g, (c) => {
    switch (c) {
      case '<':
        return '&lt;';
      case '>':
        return '&gt;';
      case '&':
        return '&amp;';
      case '"':
        return '&quot;';
      default:
        return `&#${c.charCodeAt(0)};`;
    }
  });
}

function writeAttributes(attrs: readonly RequestAttribute[]): string {
  let s = '';
  for (const a of attrs) {
    s += `<Attribute AttributeId="${escapeXml(a.attributeId)}" DataType="${escapeXml(a.dataType)}"`;
    if (a.issuer !== undefined) s += ` Issuer="${escapeXml(a.issuer)}"`;
    s += '>';
    for (const v of a.values) s += `<AttributeValue>${escapeXml(v)}</AttributeValue>`;
    s += '</Attribute>';
  }
  return s;
}

/** The XACML 2.0 context document (XML text) of a request; `ResourceContent` goes in verbatim. */
export function requestXml(ctx: RequestContext): string {
  let s = `<Request xmlns="${CONTEXT_NS}">`;
  for (const sub of ctx.subjects) {
    s += `<Subject SubjectCategory="${escapeXml(sub.subjectCategory)}">${writeAttributes(sub.attributes)}</Subject>`;
  }
  for (const r of ctx.resources) {
    s += `<Resource>${r.resourceContent ?? ''}${writeAttributes(r.attributes)}</Resource>`;
  }
  s += `<Action>${writeAttributes(ctx.action.attributes)}</Action>`;
  s += `<Environment>${writeAttributes(ctx.environment.attributes)}</Environment>`;
  return `${s}</Request>`;
}

/** Default of `createPdp`'s `maxXPathAttributes`: most attribute values of a request XPath reads as a document. */
export const DEFAULT_MAX_XPATH_ATTRIBUTES = 256;

/** The attribute values of a request, an attribute without values counting as one. */
function attributeCount(ctx: RequestContext): number {
  let n = 0;
  const add = (attrs: readonly RequestAttribute[]): void => {
    for (const a of attrs) n += Math.max(1, a.values.length);
  };
  for (const sub of ctx.subjects) add(sub.attributes);
  for (const r of ctx.resources) add(r.attributes);
  add(ctx.action.attributes);
  add(ctx.environment.attributes);
  return n;
}

/**
 * Serializes a request context to an XACML 2.0 context document and parses it. Call it once
 * per evaluation, lazily. Throws {@link XacmlProcessingError} when the `ResourceContent` is not
 * well-formed XML, or when the request holds more than `maxAttributes` attribute values (an
 * attribute without values counts as one): building and searching the document costs time
 * that grows with it, and the attributes (headers, URL parameters) come from the caller.
 */
export function requestDocument(ctx: RequestContext, maxAttributes = DEFAULT_MAX_XPATH_ATTRIBUTES): XPathDocument {
  const count = attributeCount(ctx);
  if (count > maxAttributes) {
    throw new XacmlProcessingError(
      `request has ${count} attribute values, more than the ${maxAttributes} an XPath expression may read (maxXPathAttributes)`,
    );
  }
  let document: Document;
  try {
    document = new DOMParser({
      onError: (level, message) => {
        if (level !== 'warning') throw new Error(message);
      },
    }).parseFromString(requestXml(ctx), 'text/xml');
  } catch (e) {
    throw new XacmlProcessingError(`request document is not well-formed XML: ${(e as Error).message}`);
  }
  const request = document.documentElement;
  if (!request) throw new XacmlProcessingError('request document has no root element');
  indexDocumentOrder(document);
  return { document, request };
}

interface OrderedNode {
  compareDocumentPosition(other: unknown): number;
}

/**
 * Gives every node of `document` its document order in O(1). The `xpath` package sorts each
 * node-set it returns by asking `compareDocumentPosition`, which xmldom answers by walking
 * ancestors and sibling lists: O(n) per comparison, O(n² log n) per node-set, 0.5 s for the
 * 1,500 headers of one request. Nodes are numbered once, in document order (an element, its
 * attributes, then its children); a node outside the numbering (an XPath namespace node) is
 * compared by xmldom's own method.
 */
function indexDocumentOrder(document: Document): void {
  const order = new Map<unknown, number>();
  const fallback = (document as unknown as OrderedNode).compareDocumentPosition;
  function compare(this: OrderedNode, other: unknown): number {
    const a = order.get(this);
    const b = order.get(other);
    if (a === undefined || b === undefined) return fallback.call(this, other);
    // DOCUMENT_POSITION_PRECEDING (2) / FOLLOWING (4): containment follows from the order.
    return a === b ? 0 : b < a ? 2 : 4;
  }
  const stack: Node[] = [document];
  while (stack.length > 0) {
    const node = stack.pop()!;
    order.set(node, order.size);
    (node as unknown as OrderedNode).compareDocumentPosition = compare;
    const attributes = (node as Element).attributes;
    if (node.nodeType === 1 && attributes) {
      for (let i = 0; i < attributes.length; i++) {
        const attribute = attributes[i]!;
        order.set(attribute, order.size);
        (attribute as unknown as OrderedNode).compareDocumentPosition = compare;
      }
    }
    // Children pushed last first, so that the first is numbered next.
    for (let child = node.lastChild; child; child = child.previousSibling) stack.push(child);
  }
}

/**
 * An `AttributeSelector` path that reads the values of the attributes of one id, in one
 * section of the request or in all of them, and nothing else (see {@link directSelector}).
 */
export interface DirectSelector {
  /** The section read, or `undefined` for every section (`//Attribute[…]`). */
  readonly category: 'subject' | 'resource' | 'action' | 'environment' | undefined;
  /** The `AttributeId` compared with. */
  readonly attributeId: string;
  /** Whether the path ends with `/text()`: an empty value then selects nothing. */
  readonly text: boolean;
  /** Whether the path starts with `//`: it would also find such attributes inside a `ResourceContent`. */
  readonly anywhere: boolean;
}

const SECTIONS: Readonly<Record<string, DirectSelector['category']>> = {
  Subject: 'subject',
  Resource: 'resource',
  Action: 'action',
  Environment: 'environment',
};

// `[/p:Request/ | ./ | // ]p:Section/p:Attribute[@AttributeId='id']/p:AttributeValue[/text()]`, or
// `//p:Attribute[@AttributeId='id']/p:AttributeValue[/text()]` (p: any prefix; checked below).
// Only run on policy text, at compile time.
const DIRECT =
  /^\s*(?:(\/\/)|\/([A-Za-z_][\w.-]*):Request\/|\.\/)?(?:([A-Za-z_][\w.-]*):(Subject|Resource|Action|Environment)\/)?([A-Za-z_][\w.-]*):Attribute\[\s*@AttributeId\s*=\s*(?:'([^']*)'|"([^"]*)")\s*\]\/([A-Za-z_][\w.-]*):AttributeValue(\/text\(\))?\s*$/;

/**
 * Recognizes the `AttributeSelector` paths that read one attribute by id and nothing else:
 * `/c:Request/c:Action/c:Attribute[@AttributeId='id']/c:AttributeValue` (also relative to the
 * `<Request>` context node, `./c:Action/…` or `c:Action/…`, or from anywhere, `//c:Action/…`),
 * `//c:Attribute[@AttributeId='id']/c:AttributeValue` (every section), each optionally ending
 * with `/text()`, where every prefix names the context namespace. Returns `undefined` for any
 * other path. Such a path selects, in document order, the values of the request's attributes of
 * that id in that section: {@link selectAttributeValues} gives them without a document.
 */
export function directSelector(path: string, namespaces: XPathNamespaces): DirectSelector | undefined {
  const m = DIRECT.exec(path);
  if (m === null) return undefined;
  const [, anywhere, requestPrefix, sectionPrefix, section, attributePrefix, quoted1, quoted2, valuePrefix, text] = m;
  // `./` or nothing before a section; a section is needed unless the path starts with `//`.
  if (section === undefined && anywhere === undefined) return undefined;
  if (requestPrefix !== undefined && section === undefined) return undefined;
  for (const prefix of [requestPrefix, sectionPrefix, attributePrefix, valuePrefix]) {
    if (prefix !== undefined && (!Object.hasOwn(namespaces, prefix) || namespaces[prefix] !== CONTEXT_NS)) return undefined;
  }
  return {
    category: section === undefined ? undefined : SECTIONS[section],
    attributeId: (quoted1 ?? quoted2)!,
    text: text !== undefined,
    anywhere: anywhere !== undefined,
  };
}

/**
 * The values a {@link DirectSelector} selects in `ctx`, in document order, without building the
 * request document; `undefined` when only the document can tell (a `//` path over a request
 * with `ResourceContent`, which may hold such elements too).
 */
export function selectAttributeValues(ctx: RequestContext, selector: DirectSelector): string[] | undefined {
  const { category, attributeId, text } = selector;
  if (selector.anywhere && ctx.resources.some((r) => r.resourceContent !== undefined)) return undefined;
  const out: string[] = [];
  const add = (attrs: readonly RequestAttribute[]): void => {
    for (let i = 0; i < attrs.length; i++) {
      const a = attrs[i]!;
      if (a.attributeId !== attributeId) continue;
      // `text()` of an empty <AttributeValue/> is no node; the element itself has the value "".
      for (const v of a.values) if (!text || v !== '') out.push(v);
    }
  };
  if (category === undefined || category === 'subject') for (const sub of ctx.subjects) add(sub.attributes);
  if (category === undefined || category === 'resource') for (const r of ctx.resources) add(r.attributes);
  if (category === undefined || category === 'action') add(ctx.action.attributes);
  if (category === undefined || category === 'environment') add(ctx.environment.attributes);
  return out;
}

const compiled = new WeakMap<XPathNamespaces, Map<string, XPathEvaluator>>();

function compile(expression: string, ns: XPathNamespaces): XPathEvaluator {
  let byExpr = compiled.get(ns);
  if (!byExpr) compiled.set(ns, (byExpr = new Map()));
  let ev = byExpr.get(expression);
  if (!ev) {
    try {
      ev = xpath.parse(expression);
    } catch (e) {
      throw new XacmlProcessingError(`invalid XPath expression "${expression}": ${(e as Error).message}`);
    }
    byExpr.set(expression, ev);
  }
  return ev;
}

function run(doc: XPathDocument, expression: string, ns: XPathNamespaces): XPathResultValue {
  const ev = compile(expression, ns);
  try {
    return ev.evaluate({ node: doc.request, namespaces: ns });
  } catch (e) {
    throw new XacmlProcessingError(`XPath expression "${expression}" failed: ${(e as Error).message}`);
  }
}

function nodes(doc: XPathDocument, expression: string, ns: XPathNamespaces): Node[] {
  const r = run(doc, expression, ns);
  try {
    return r.nodeset().toArray();
  } catch {
    throw new XacmlProcessingError(`XPath expression "${expression}" does not select nodes`);
  }
}

/** The XPath string-value of a node: an attribute's or text node's value, an element's text. */
function stringValue(n: Node): string {
  switch (n.nodeType) {
    case 1: // element
    case 11: // fragment
      return n.textContent ?? '';
    case 9: // document
      return (n as Document).documentElement?.textContent ?? '';
    default:
      return n.nodeValue ?? '';
  }
}

/**
 * Evaluates an AttributeSelector's `RequestContextPath`: the string value of each selected node
 * (attribute value, text node content, element text content), in document order. An expression
 * whose result is a string, number or boolean yields that one value. Throws
 * {@link XacmlProcessingError} for an invalid expression or an unbound prefix.
 */
export function selectValues(doc: XPathDocument, path: string, namespaces: XPathNamespaces): string[] {
  const r = run(doc, path, namespaces);
  let list: Node[];
  try {
    list = r.nodeset().toArray();
  } catch {
    return [r.stringValue()]; // a string, number or boolean result
  }
  const out = new Array<string>(list.length);
  for (let i = 0; i < list.length; i++) out[i] = stringValue(list[i]!);
  return out;
}

/** `xpath-node-count` (A.3.15): the number of nodes the expression selects. */
export function xpathNodeCount(doc: XPathDocument, expression: string, namespaces: XPathNamespaces): bigint {
  return BigInt(nodes(doc, expression, namespaces).length);
}

/**
 * `xpath-node-equal` (A.3.15): whether some node selected by `a` is, by `op:node-equal`
 * (identity), some node selected by `b`.
 */
export function xpathNodeEqual(doc: XPathDocument, a: string, b: string, namespaces: XPathNamespaces): boolean {
  const left = new Set(nodes(doc, a, namespaces));
  for (const n of nodes(doc, b, namespaces)) if (left.has(n)) return true;
  return false;
}

/**
 * `xpath-node-match` (A.3.15): `a` is first extended to `a | a//* | a//@*`; true when some node
 * selected by `b` is one of those: a node selected by `a`, an element below one, or an attribute
 * of such a node or of an element below it. (A text node below is not: `//*` selects elements.)
 */
export function xpathNodeMatch(doc: XPathDocument, a: string, b: string, namespaces: XPathNamespaces): boolean {
  const roots = new Set(nodes(doc, a, namespaces));
  for (const n of nodes(doc, b, namespaces)) {
    if (roots.has(n)) return true;
    let up: Node | null;
    if (n.nodeType === 2) up = (n as unknown as { ownerElement: Node | null }).ownerElement;
    else if (n.nodeType === 1) up = n.parentNode;
    else continue;
    for (; up; up = up.parentNode) if (roots.has(up)) return true;
  }
  return false;
}

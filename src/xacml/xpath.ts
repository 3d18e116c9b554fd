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
 * @module
 */
import { createRequire } from 'node:module';
import { DOMParser, type Document, type Element, type Node } from '@xmldom/xmldom';
import type { RequestAttribute, RequestContext } from './request-context.js';
import { XacmlProcessingError } from './functions/types.js';

/** The XACML 2.0 context namespace. */
export const CONTEXT_NS = 'urn:oasis:names:tc:xacml:2.0:context:schema:os';

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

/**
 * Serializes a request context to an XACML 2.0 context document and parses it. Call it once
 * per evaluation, lazily. Throws {@link XacmlProcessingError} when the `ResourceContent` is not
 * well-formed XML.
 */
export function requestDocument(ctx: RequestContext): XPathDocument {
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
  return { document, request };
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

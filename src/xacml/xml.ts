/**
 * Safe XML reading for policies and requests: rejects DOCTYPE/entity declarations before
 * parsing, bounds size and depth, resolves namespaces, decodes only the five XML entities and
 * character references, and yields a small element tree with paths for error messages.
 *
 * @module
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { XacmlSyntaxError } from './errors.js';

/** Limits applied to every XML document the evaluator reads. */
export interface XmlLimits {
  /** Largest accepted document, in UTF-16 code units. Default 4 MiB. */
  maxSize?: number;
  /** Deepest accepted element nesting. Default 64. */
  maxDepth?: number;
}

/** Default {@link XmlLimits.maxSize}: 4 MiB. */
export const DEFAULT_MAX_SIZE = 4 * 1024 * 1024;
/** Default {@link XmlLimits.maxDepth}: 64. */
export const DEFAULT_MAX_DEPTH = 64;

/** One element of a parsed document. */
export interface XmlElement {
  /** Local name. */
  readonly local: string;
  /** Namespace URI ('' when none). */
  readonly ns: string;
  /** The qualified name as written. */
  readonly qname: string;
  /** Attributes by name as written (namespace declarations excluded). */
  readonly attrs: ReadonlyMap<string, string>;
  /** Child elements, in order. */
  readonly children: readonly XmlElement[];
  /** Concatenated character data directly inside this element. */
  readonly text: string;
  /** Namespace declarations in scope (prefix → URI; '' is the default namespace). */
  readonly nsScope: Readonly<Record<string, string>>;
  /** The element's path, for error messages. */
  readonly path: string;
  /** Parent element (undefined for the root). */
  readonly parent: XmlElement | undefined;
}

/** Attributes whose value names an element in paths, like `Rule[@RuleId="r"]`. @internal */
export const ID_ATTRS: Record<string, string> = {
  PolicySet: 'PolicySetId',
  Policy: 'PolicyId',
  Rule: 'RuleId',
  VariableDefinition: 'VariableId',
  Obligation: 'ObligationId',
};
/** Elements that occur at most once where they occur, so their path needs no position. @internal */
export const SINGLETONS = new Set([
  'Target',
  'Condition',
  'Subjects',
  'Resources',
  'Actions',
  'Environments',
  'Obligations',
  'PolicyDefaults',
  'PolicySetDefaults',
  'Description',
  'Request',
  'Response',
  'Action',
  'Environment',
  'ResourceContent',
  'XPathVersion',
]);

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  // Entities are decoded by us: only the five XML ones and character references.
  processEntities: false,
  htmlEntities: false,
  cdataPropName: '#cdata',
  ignoreDeclaration: true,
  ignorePiTags: true,
  maxNestedTags: 10_000,
});

const ENTITY = /&(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z_][\w.-]*);|&/g;
const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decode(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(ENTITY, (m, ref: string | undefined) => {
    if (ref === undefined) throw new XacmlSyntaxError('Malformed XML: bare "&"');
    if (ref[0] === '#') {
      const cp = ref[1] === 'x' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!(cp > 0 && cp <= 0x10ffff) || (cp >= 0xd800 && cp <= 0xdfff)) {
        throw new XacmlSyntaxError(`Malformed XML: invalid character reference ${m}`);
      }
      return String.fromCodePoint(cp);
    }
    const v = NAMED[ref];
    if (v === undefined) throw new XacmlSyntaxError(`Undeclared entity reference ${m} (entities are not supported)`);
    return v;
  });
}

/**
 * Parses an XML document safely into an element tree.
 *
 * @throws XacmlSyntaxError for anything not well-formed, a DOCTYPE or entity declaration,
 *   an undeclared entity, a document over the size or depth limit.
 */
export function parseXml(xml: string, limits: XmlLimits = {}): XmlElement {
  const maxSize = limits.maxSize ?? DEFAULT_MAX_SIZE;
  const maxDepth = limits.maxDepth ?? DEFAULT_MAX_DEPTH;
  if (typeof xml !== 'string') throw new XacmlSyntaxError('XML document must be a string');
  if (xml.length > maxSize) throw new XacmlSyntaxError(`XML document larger than ${maxSize} characters`);
  // Checked on the raw text, before any parser sees it: no DTD means no entity expansion.
  if (/<!DOCTYPE/i.test(xml)) throw new XacmlSyntaxError('DOCTYPE declarations are not allowed');
  if (/<!ENTITY/i.test(xml)) throw new XacmlSyntaxError('ENTITY declarations are not allowed');
  checkDepth(xml, maxDepth);
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    throw new XacmlSyntaxError(`Malformed XML: ${valid.err.msg} (line ${valid.err.line}, column ${valid.err.col})`);
  }
  let nodes: unknown[];
  try {
    nodes = parser.parse(xml) as unknown[];
  } catch (e) {
    throw new XacmlSyntaxError(`Malformed XML: ${(e as Error).message}`);
  }
  const roots = nodes.filter((n) => elementName(n) !== undefined);
  if (roots.length !== 1) throw new XacmlSyntaxError(`XML document must have exactly one root element, found ${roots.length}`);
  return build(roots[0] as Record<string, unknown>, undefined, {}, '', 1, maxDepth);
}

/**
 * Nesting check on the raw text, in one linear pass (no backtracking regex: a hostile document
 * must be refused in linear time), before the parser builds anything.
 */
function checkDepth(xml: string, maxDepth: number): void {
  const n = xml.length;
  let depth = 0;
  let i = xml.indexOf('<');
  while (i !== -1 && i < n) {
    let end: number;
    if (xml.startsWith('<!--', i)) end = endOf(xml, '-->', i + 4);
    else if (xml.startsWith('<![CDATA[', i)) end = endOf(xml, ']]>', i + 9);
    else if (xml.startsWith('<?', i)) end = endOf(xml, '?>', i + 2);
    else if (xml.startsWith('<!', i) || xml[i + 1] === '/') {
      if (xml[i + 1] === '/') depth--;
      end = endOf(xml, '>', i + 2);
    } else {
      // A start tag: find its '>' outside quoted attribute values.
      let j = i + 1;
      let quote = '';
      for (; j < n; j++) {
        const c = xml[j]!;
        if (quote) {
          if (c === quote) quote = '';
        } else if (c === '"' || c === "'") quote = c;
        else if (c === '>') break;
      }
      if (j >= n) return; // unterminated: the validator reports it
      if (xml[j - 1] !== '/' && ++depth > maxDepth) throw new XacmlSyntaxError(`XML nesting deeper than ${maxDepth} levels`);
      end = j + 1;
    }
    if (end < 0) return;
    i = xml.indexOf('<', end);
  }
}

/** Index just after `token` searched from `from`, or -1. */
function endOf(xml: string, token: string, from: number): number {
  const k = xml.indexOf(token, from);
  return k < 0 ? -1 : k + token.length;
}

function elementName(node: unknown): string | undefined {
  for (const k of Object.keys(node as object)) {
    if (k !== ':@' && k !== '#text' && k !== '#cdata') return k;
  }
  return undefined;
}

function build(
  node: Record<string, unknown>,
  parent: XmlElement | undefined,
  scope: Record<string, string>,
  parentPath: string,
  position: number,
  maxDepth: number,
  depth = 1,
): XmlElement {
  if (depth > maxDepth) throw new XacmlSyntaxError(`XML nesting deeper than ${maxDepth} levels`, parentPath);
  const qname = elementName(node)!;
  const rawAttrs = (node[':@'] ?? {}) as Record<string, string>;
  const attrs = new Map<string, string>();
  let nsScope = scope;
  for (const [k, v] of Object.entries(rawAttrs)) {
    const value = intern(decode(String(v)));
    if (k === 'xmlns' || k.startsWith('xmlns:')) {
      if (nsScope === scope) nsScope = { ...scope };
      nsScope[k === 'xmlns' ? '' : k.slice(6)] = value;
    } else {
      attrs.set(k, value);
    }
  }
  const colon = qname.indexOf(':');
  const prefix = colon < 0 ? '' : qname.slice(0, colon);
  const local = colon < 0 ? qname : qname.slice(colon + 1);
  const ns = nsScope[prefix];
  if (ns === undefined && prefix !== '') throw new XacmlSyntaxError(`Undeclared namespace prefix "${prefix}"`, parentPath);
  let step = local;
  const idAttr = ID_ATTRS[local];
  if (idAttr && attrs.has(idAttr)) step += `[@${idAttr}=${JSON.stringify(attrs.get(idAttr))}]`;
  else if (!SINGLETONS.has(local)) step += `[${position}]`;
  const path = `${parentPath}/${step}`;
  const children: XmlElement[] = [];
  let text = '';
  const el: XmlElement = { local, ns: ns ?? '', qname, attrs, children, text, nsScope, path, parent };
  const counts = new Map<string, number>();
  for (const child of (node[qname] ?? []) as Record<string, unknown>[]) {
    if ('#text' in child) {
      text += decode(String(child['#text']));
    } else if ('#cdata' in child) {
      for (const c of child['#cdata'] as Record<string, unknown>[]) text += String(c['#text'] ?? '');
    } else {
      const name = elementName(child);
      if (name === undefined) continue;
      const localName = name.slice(name.indexOf(':') + 1);
      const n = (counts.get(localName) ?? 0) + 1;
      counts.set(localName, n);
      children.push(build(child, el, nsScope, path, n, maxDepth, depth + 1));
    }
  }
  (el as { text: string }).text = text;
  return el;
}

/**
 * Returns the internalized copy of a short string. Ids read from XML are slices of the document;
 * comparing them with the request's strings would compare characters on every evaluation,
 * whereas two internalized strings compare by identity.
 */
export function intern(s: string): string {
  if (s.length > 256) return s;
  for (const k in { [s]: 0 }) return k;
  return s;
}

/** Escapes text for element content or a double-quoted attribute. */
export function escapeXml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;'));
}

/**
 * Serializes an element (with its in-scope namespace declarations on it, so that it stands
 * alone) back to XML.
 */
export function serializeElement(el: XmlElement): string {
  const decls: string[] = [];
  for (const [p, uri] of Object.entries(el.nsScope)) {
    decls.push(` ${p === '' ? 'xmlns' : `xmlns:${p}`}="${escapeXml(uri)}"`);
  }
  return write(el, decls.join(''));
}

function write(el: XmlElement, extra: string): string {
  let s = `<${el.qname}${extra}`;
  for (const [k, v] of el.attrs) s += ` ${k}="${escapeXml(v)}"`;
  if (el.children.length === 0 && el.text === '') return `${s}/>`;
  s += '>';
  if (el.children.length === 0) s += escapeXml(el.text);
  else for (const c of el.children) s += write(c, '');
  return `${s}</${el.qname}>`;
}

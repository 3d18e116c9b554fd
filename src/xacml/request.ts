/**
 * Reading an XACML 2.0 `<Request>` document into a {@link RequestContext}.
 *
 * @module
 */
import { CONTEXT_NAMESPACES } from './constants.js';
import { XacmlSyntaxError } from './errors.js';
import { ACCESS_SUBJECT } from './request-context.js';
import type { RequestAttribute, RequestContext, RequestResource } from './request-context.js';
import { parseXml, serializeElement } from './xml.js';
import type { XmlElement, XmlLimits } from './xml.js';

/**
 * Parses the XML of an XACML 2.0 request context (`<Request>` in the 2.0 context namespace).
 *
 * @example
 * ```ts
 * const ctx = parseRequest(xml);
 * pdp.evaluate(ctx); // evaluate without XML work, as many times as needed
 * ```
 * @throws {@link XacmlSyntaxError} with the path of the offending element for an invalid or
 *   hostile document.
 */
export function parseRequest(xml: string, limits?: XmlLimits): RequestContext {
  const root = parseXml(xml, limits);
  if (root.local !== 'Request' || !CONTEXT_NAMESPACES.has(root.ns)) {
    throw new XacmlSyntaxError(
      `Expected a <Request> in namespace ${[...CONTEXT_NAMESPACES][0]}, found <${root.qname}> in "${root.ns}"`,
      root.path,
    );
  }
  const ctx: RequestContext = { subjects: [], resources: [], action: { attributes: [] }, environment: { attributes: [] } };
  let actions = 0;
  let environments = 0;
  for (const el of root.children) {
    if (!CONTEXT_NAMESPACES.has(el.ns)) throw new XacmlSyntaxError(`Unexpected element <${el.qname}>`, el.path);
    switch (el.local) {
      case 'Subject':
        ctx.subjects.push({ subjectCategory: el.attrs.get('SubjectCategory') ?? ACCESS_SUBJECT, attributes: attributes(el) });
        break;
      case 'Resource': {
        const res: RequestResource = { attributes: attributes(el) };
        const content = el.children.find((c) => c.local === 'ResourceContent');
        if (content) res.resourceContent = serializeElement(content);
        ctx.resources.push(res);
        break;
      }
      case 'Action':
        if (++actions > 1) throw new XacmlSyntaxError('More than one <Action>', el.path);
        ctx.action.attributes = attributes(el);
        break;
      case 'Environment':
        if (++environments > 1) throw new XacmlSyntaxError('More than one <Environment>', el.path);
        ctx.environment.attributes = attributes(el);
        break;
      default:
        throw new XacmlSyntaxError(`Unexpected element <${el.qname}> in <Request>`, el.path);
    }
  }
  return ctx;
}

function attributes(section: XmlElement): RequestAttribute[] {
  const out: RequestAttribute[] = [];
  for (const el of section.children) {
    if (el.local === 'ResourceContent' && section.local === 'Resource') continue;
    if (el.local !== 'Attribute') throw new XacmlSyntaxError(`Unexpected element <${el.qname}> in <${section.local}>`, el.path);
    const attributeId = el.attrs.get('AttributeId');
    const dataType = el.attrs.get('DataType');
    if (!attributeId) throw new XacmlSyntaxError('<Attribute> without AttributeId', el.path);
    if (!dataType) throw new XacmlSyntaxError('<Attribute> without DataType', el.path);
    const values: string[] = [];
    for (const v of el.children) {
      if (v.local !== 'AttributeValue') throw new XacmlSyntaxError(`Unexpected element <${v.qname}> in <Attribute>`, v.path);
      values.push(v.children.length > 0 ? v.children.map(serializeElement).join('') : v.text);
    }
    const attr: RequestAttribute = { attributeId, dataType, values };
    const issuer = el.attrs.get('Issuer');
    if (issuer !== undefined) attr.issuer = issuer;
    out.push(attr);
  }
  return out;
}

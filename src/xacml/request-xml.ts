/**
 * Serializes a request context to XACML 2.0 request XML, to show and archive what the gateway
 * asked the PDP (and to feed the `xacml-eval` CLI).
 *
 * @module
 */
import { CONTEXT_NS } from './constants.js';
import type { RequestAttribute, RequestContext } from './request-context.js';
import { ACCESS_SUBJECT } from './request-context.js';
import { escapeXml as escape } from './xml.js';

/**
 * Returns the XACML 2.0 `<Request>` document of a request context, indented with two spaces,
 * attributes in the context's order. Not used on the hot path: the PDP takes the context as data.
 *
 * @example
 * ```ts
 * import { toRequestXml } from 'express-access-gateway/xacml';
 * console.log(toRequestXml(buildXacmlRequest(invocation, req.gateway)));
 * ```
 */
export function toRequestXml(request: RequestContext): string {
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>', `<Request xmlns="${CONTEXT_NS}">`];
  for (const subject of request.subjects) {
    const category = subject.subjectCategory === ACCESS_SUBJECT ? '' : ` SubjectCategory="${escape(subject.subjectCategory)}"`;
    section(lines, `Subject${category}`, 'Subject', subject.attributes);
  }
  for (const resource of request.resources) {
    const extra = resource.resourceContent === undefined ? [] : [`    <ResourceContent>${resource.resourceContent}</ResourceContent>`];
    section(lines, 'Resource', 'Resource', resource.attributes, extra);
  }
  section(lines, 'Action', 'Action', request.action.attributes);
  section(lines, 'Environment', 'Environment', request.environment.attributes);
  lines.push('</Request>');
  return `${lines.join('\n')}\n`;
}

function section(lines: string[], open: string, close: string, attributes: readonly RequestAttribute[], extra: string[] = []): void {
  if (attributes.length === 0 && extra.length === 0) {
    lines.push(`  <${open}/>`);
    return;
  }
  lines.push(`  <${open}>`, ...extra);
  for (const attribute of attributes) {
    const issuer = attribute.issuer === undefined ? '' : ` Issuer="${escape(attribute.issuer)}"`;
    lines.push(`    <Attribute AttributeId="${escape(attribute.attributeId)}" DataType="${escape(attribute.dataType)}"${issuer}>`);
    for (const value of attribute.values) lines.push(`      <AttributeValue>${escape(value)}</AttributeValue>`);
    lines.push('    </Attribute>');
  }
  lines.push(`  </${close}>`);
}

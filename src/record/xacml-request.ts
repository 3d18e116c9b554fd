/**
 * The XACML request in a record: written from the evaluator's request context (bounded, without
 * the token, credential-bearing headers redacted), and read back into a request context that a
 * PDP evaluates again (`xacmlRequestOf`), for example to replay a denied request against a draft
 * policy.
 *
 * @module
 */
import { XacmlAttributes } from '../authorize/attributes.js';
import { ACCESS_SUBJECT, XS_STRING } from '../xacml/request-context.js';
import type { RequestAttribute, RequestContext, RequestSubject } from '../xacml/request-context.js';
import { fit, type Budget, type RecordLimits } from './bounds.js';
import { REDACTED } from './redact.js';
import type { RecordedXacmlAttribute, RecordedXacmlRequest, TransactionRecord } from './types.js';

const CATEGORIES = ['subject', 'resource', 'action', 'environment'] as const;

/** The header name of a transport-header attribute id, else `undefined`. */
function headerOf(attributeId: string): string | undefined {
  return attributeId.startsWith(XacmlAttributes.headerPrefix) ? attributeId.slice(XacmlAttributes.headerPrefix.length) : undefined;
}

/**
 * The record's copy of an evaluator request: attributes by category, values cut within the
 * record's bounds, a value holding `secret` and every value of a header in `redactedHeaders`
 * replaced by `[redacted]` (the request is then marked `incomplete`).
 *
 * @internal
 */
export function recordXacmlRequest(
  request: RequestContext,
  secret: string | undefined,
  redactedHeaders: ReadonlySet<string>,
  limits: RecordLimits,
  budget: Budget,
): RecordedXacmlRequest {
  const out: RecordedXacmlRequest = { subject: [], resource: [], action: [], environment: [] };
  let incomplete = false;
  const add = (list: RecordedXacmlAttribute[], attribute: RequestAttribute, subjectCategory: string | undefined): void => {
    if (list.length >= limits.maxEntries) {
      incomplete = true;
      return;
    }
    const header = headerOf(attribute.attributeId);
    const redactAll = header !== undefined && redactedHeaders.has(header);
    const values: string[] = [];
    for (const value of attribute.values.slice(0, limits.maxEntries)) {
      const text = String(value);
      if (redactAll || (secret !== undefined && text.includes(secret))) {
        values.push(REDACTED);
        incomplete = true;
        continue;
      }
      const kept = fit(text, limits, budget);
      if (kept !== text) incomplete = true;
      values.push(kept);
    }
    if (attribute.values.length > limits.maxEntries) incomplete = true;
    const recorded: RecordedXacmlAttribute = { id: fit(String(attribute.attributeId), limits, budget), values };
    if (attribute.dataType !== XS_STRING) recorded.dataType = String(attribute.dataType);
    if (attribute.issuer !== undefined) recorded.issuer = String(attribute.issuer);
    if (subjectCategory !== undefined && subjectCategory !== ACCESS_SUBJECT) recorded.subjectCategory = subjectCategory;
    list.push(recorded);
  };
  for (const subject of request.subjects) for (const attribute of subject.attributes) add(out.subject, attribute, subject.subjectCategory);
  for (const resource of request.resources) for (const attribute of resource.attributes) add(out.resource, attribute, undefined);
  for (const attribute of request.action.attributes) add(out.action, attribute, undefined);
  for (const attribute of request.environment.attributes) add(out.environment, attribute, undefined);
  if (incomplete) out.incomplete = true;
  return out;
}

function fail(path: string, what: string): never {
  throw new TypeError(`xacmlRequestOf: record.authorization.request${path} ${what}`);
}

function attributeOf(value: unknown, path: string): RecordedXacmlAttribute {
  if (typeof value !== 'object' || value === null) fail(path, 'must be an object');
  const a = value as Record<string, unknown>;
  if (typeof a['id'] !== 'string' || a['id'] === '') fail(`${path}.id`, 'must be a non-empty string');
  if (!Array.isArray(a['values']) || !a['values'].every((v) => typeof v === 'string'))
    fail(`${path}.values`, 'must be an array of strings');
  for (const key of ['dataType', 'issuer', 'subjectCategory'] as const) {
    if (a[key] !== undefined && (typeof a[key] !== 'string' || a[key] === ''))
      fail(`${path}.${key}`, 'must be a non-empty string when present');
  }
  return a as unknown as RecordedXacmlAttribute;
}

/**
 * Turns a {@link RecordedXacmlRequest} back into the evaluator's request context: attributes in
 * their recorded order, `xs:string` unless the record names another type, subject attributes
 * grouped by subject category (`access-subject` first). Give it to `Pdp.evaluate` (or `explain`).
 *
 * @throws TypeError naming the field when `recorded` is not a recorded request.
 */
export function toXacmlRequest(recorded: RecordedXacmlRequest): RequestContext {
  if (typeof recorded !== 'object' || recorded === null) fail('', 'must be an object');
  const lists: Record<(typeof CATEGORIES)[number], RequestAttribute[]> = { subject: [], resource: [], action: [], environment: [] };
  const subjects = new Map<string, RequestSubject>([[ACCESS_SUBJECT, { subjectCategory: ACCESS_SUBJECT, attributes: [] }]]);
  for (const category of CATEGORIES) {
    const list: unknown = recorded[category];
    if (list === undefined) continue;
    if (!Array.isArray(list)) fail(`.${category}`, 'must be an array');
    list.forEach((item: unknown, i) => {
      const a = attributeOf(item, `.${category}[${i}]`);
      const attribute: RequestAttribute = { attributeId: a.id, dataType: a.dataType ?? XS_STRING, values: [...a.values] };
      if (a.issuer !== undefined) attribute.issuer = a.issuer;
      if (category !== 'subject') {
        lists[category].push(attribute);
        return;
      }
      const subjectCategory = a.subjectCategory ?? ACCESS_SUBJECT;
      let subject = subjects.get(subjectCategory);
      if (subject === undefined) {
        subject = { subjectCategory, attributes: [] };
        subjects.set(subjectCategory, subject);
      }
      subject.attributes.push(attribute);
    });
  }
  return {
    subjects: [...subjects.values()],
    resources: [{ attributes: lists.resource }],
    action: { attributes: lists.action },
    environment: { attributes: lists.environment },
  };
}

/**
 * The XACML request a recorded transaction was decided on, ready to be evaluated again (for
 * example against a draft policy, to see whether it would now permit a denied request); `undefined`
 * when the record has none (no authorization, or a Permit, whose request is not recorded).
 * `record.authorization.request.incomplete` says when values were redacted or cut.
 *
 * @example
 * ```ts
 * import { createPdp } from 'express-access-gateway/xacml';
 * import { xacmlRequestOf } from 'express-access-gateway';
 *
 * const record = await store.get(transactionId);
 * const request = record && xacmlRequestOf(record);
 * if (request) console.log(createPdp({ policies: [draftXml] }).evaluate(request).results[0]?.decision);
 * ```
 * @throws TypeError naming the field when the record's request is malformed.
 */
export function xacmlRequestOf(record: Pick<TransactionRecord, 'authorization'>): RequestContext | undefined {
  const recorded = record?.authorization?.request;
  return recorded === undefined ? undefined : toXacmlRequest(recorded);
}

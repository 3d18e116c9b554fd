/**
 * The policy decision point: policies parsed and compiled once by {@link createPdp}, requests
 * evaluated by closures.
 *
 * @module
 */
import { optionChecks, optionKeys, type OptionChecks } from '../options.js';
import { onlyOneApplicable } from './compile/combining.js';
import type { Combinable } from './compile/combining.js';
import { attributeReferences } from './compile/expression.js';
import type { AttributeReferences } from './compile/expression.js';
import { PolicyCompiler } from './compile/policy.js';
import type { RepositoryEntry } from './compile/policy.js';
import { XacmlSyntaxError } from './errors.js';
import { EvalContext } from './eval-context.js';
import { explainEvaluation } from './explain.js';
import type { XacmlExplanation } from './explain.js';
import type { AttributeFinder, Clock, PdpRuntime } from './eval-context.js';
import { parseRequest } from './request.js';
import type { RequestAttribute, RequestContext } from './request-context.js';
import type { XacmlObligation, XacmlResponse, XacmlResult } from './response.js';
import { DECISION_NAMES, INDETERMINATE, OK_STATUS } from './runtime.js';
import { RESOURCE_ID, RESOURCE_SCOPE, STATUS_OK, STATUS_PROCESSING_ERROR, STATUS_SYNTAX_ERROR } from './constants.js';
import type { Result } from './runtime.js';
import { parseXml } from './xml.js';
import { DEFAULT_MAX_XPATH_ATTRIBUTES } from './xpath.js';
import type { XmlElement, XmlLimits } from './xml.js';

export type { AttributeFinder } from './eval-context.js';
export type { AttributeDesignatorReference, AttributeReferences, AttributeSelectedReference } from './compile/expression.js';

/** Options of {@link createPdp}. */
export interface PdpOptions {
  /** XML of the top-level Policy/PolicySet documents (several: the applicable one decides). */
  policies: string[];
  /** XML of documents reachable only through PolicyIdReference / PolicySetIdReference. */
  references?: string[];
  /** Source of attributes the request lacks (called at most once per attribute and evaluation). */
  attributeFinder?: AttributeFinder;
  /** Children of a resource, for hierarchical requests (resource `scope` Children/Descendants). */
  resourceChildren?: (resourceId: string) => string[];
  /** Clock for current-time/date/dateTime when the request has none. Default `() => new Date()`. */
  now?: () => Date;
  /** Limits for every XML document read (policies and requests). Defaults: 4 MiB, depth 64. */
  limits?: XmlLimits;
  /**
   * Most attribute values (an attribute without values counting as one) a request may hold for
   * an XPath expression to read it as a document: an `AttributeSelector` other than those that
   * read one attribute by id (`//xacml-context:Attribute[@AttributeId='…']/xacml-context:AttributeValue`
   * and its forms, answered without a document whatever the request's size), or an
   * `xpath-node-*` function. Past it, the expression is Indeterminate (processing-error): the
   * document costs time that grows with the request, whose attributes (headers, URL parameters)
   * come from the caller. Default 256.
   */
  maxXPathAttributes?: number;
}

/** A compiled set of policies. */
export interface Pdp {
  /**
   * Evaluates a request (XML, or a {@link RequestContext} for no XML work at all). Never throws
   * for a bad request: an invalid request document gives Indeterminate with `syntax-error`.
   */
  evaluate(request: string | RequestContext): XacmlResponse;
  /**
   * Evaluates a request again, explaining each result: which policy and rule decided, and which
   * target section or condition failed in the elements that did not apply (one explanation per
   * result of {@link Pdp.evaluate}, with the same decisions). Slower than `evaluate`: call it when
   * the reason is wanted, for example only for what is not a Permit. Optional for a `Pdp` of your
   * own; `createPdp`'s has it.
   */
  explain?(request: string | RequestContext): XacmlExplanation[];
  /**
   * What the policies can read of a request, computed when they were compiled (referenced
   * policies included): every attribute designator, and whether an `AttributeSelector` or an
   * XPath function reads the request document. A caller building requests may leave out the
   * attributes no designator names when `selectors` is `false`: the decisions stay the same.
   */
  readonly references: AttributeReferences;
}

/** Most resources one hierarchical request may expand to. */
const MAX_RESOURCES = 10_000;

/** An array of XML texts (a non-empty one when `required`). */
function xmlTexts(check: OptionChecks, value: unknown, path: string, required: boolean): string[] {
  if (!Array.isArray(value) || (required && value.length === 0) || !value.every((p) => typeof p === 'string')) {
    check.fail(path, required ? 'must be a non-empty array of XML strings' : 'must be an array of XML strings');
  }
  return value as string[];
}

const PDP_KEYS = optionKeys<PdpOptions>({
  policies: true,
  references: true,
  attributeFinder: true,
  resourceChildren: true,
  now: true,
  limits: true,
  maxXPathAttributes: true,
});

/**
 * Parses and compiles the policies once and returns the {@link Pdp}.
 *
 * Several top-level policies are combined as a policy repository does: the one whose target
 * matches decides; more than one applicable gives Indeterminate; none gives NotApplicable.
 * Reference documents are compiled only when something refers to them, so an invalid one that
 * nothing refers to does no harm.
 *
 * @example
 * ```ts
 * const pdp = createPdp({ policies: [policyXml] });
 * const { results } = pdp.evaluate(requestXml);
 * if (results[0]?.decision === 'Permit') { ... }
 * ```
 * @throws {@link XacmlSyntaxError} (with the element's path) for an invalid policy, including
 *   static type errors and unknown functions, data types or combining algorithms.
 * @throws `InvalidOptionError` (a `TypeError`, code `ERR_INVALID_OPTION`) for a bad option.
 */
export function createPdp(options: PdpOptions): Pdp {
  const check = optionChecks('createPdp');
  check.object(options, '');
  check.known(options, '', PDP_KEYS);
  const policies = xmlTexts(check, options.policies, 'policies', true);
  const references = options.references === undefined ? [] : xmlTexts(check, options.references, 'references', false);
  const attributeFinder = check.optionalFunction<AttributeFinder>(options.attributeFinder, 'attributeFinder');
  const resourceChildren = check.optionalFunction<(resourceId: string) => string[]>(options.resourceChildren, 'resourceChildren');
  const now = check.optionalFunction<() => Date>(options.now, 'now') ?? (() => new Date());
  const limits = options.limits === undefined ? undefined : check.object<XmlLimits>(options.limits, 'limits');
  if (limits !== undefined) {
    check.positive(limits.maxSize, 'limits.maxSize', 1, true);
    check.positive(limits.maxDepth, 'limits.maxDepth', 1, true);
  }
  const maxXPathAttributes = check.nonNegative(options.maxXPathAttributes, 'maxXPathAttributes', DEFAULT_MAX_XPATH_ATTRIBUTES, true);

  const roots = policies.map((xml) => parseXml(xml, limits));
  const repository: RepositoryEntry[] = [];
  const unreadable: string[] = [];
  for (const root of roots) {
    const entry = entryOf(root);
    if (entry) repository.push(entry);
  }
  references.forEach((xml, i) => {
    try {
      const root = parseXml(xml, limits);
      const entry = entryOf(root);
      if (entry) repository.push(entry);
      else unreadable.push(`references[${i}] is not a Policy or PolicySet with an id`);
    } catch (e) {
      unreadable.push(`references[${i}]: ${(e as Error).message}`);
    }
  });
  const compiler = new PolicyCompiler(repository, unreadable);
  const top = roots.map((r) => compiler.compileRoot(r));
  const runtime: PdpRuntime = { attributeFinder, now, maxXPathAttributes };
  const nSlots = (): number => compiler.slots.size;
  const decide =
    top.length === 1 ? (ctx: EvalContext): Result => top[0]!.evaluate(ctx) : (ctx: EvalContext): Result => repositoryDecision(top, ctx);

  const evaluateOne = (request: RequestContext, clock: Clock, resourceId?: string): XacmlResult => {
    let r: Result;
    try {
      r = decide(new EvalContext(request, runtime, nSlots(), clock));
    } catch (e) {
      // Fail closed: whatever escaped is a processing error.
      r = {
        decision: INDETERMINATE,
        status: { code: STATUS_PROCESSING_ERROR, message: `Unexpected error: ${(e as Error)?.message ?? String(e)}` },
      };
    }
    return toResult(r, resourceId);
  };

  const attributeRefs = attributeReferences(compiler.slots);

  /** The request context of an `evaluate`/`explain` argument, or the Indeterminate result of a bad one. */
  const requestOf = (request: string | RequestContext): RequestContext | XacmlResult => {
    if (typeof request === 'string') {
      try {
        return parseRequest(request, limits);
      } catch (e) {
        const message = e instanceof XacmlSyntaxError ? e.message : `Invalid request: ${(e as Error)?.message ?? String(e)}`;
        return { decision: 'Indeterminate', status: { code: STATUS_SYNTAX_ERROR, message }, obligations: [] };
      }
    }
    if (!isRequestContext(request))
      return {
        decision: 'Indeterminate',
        status: { code: STATUS_SYNTAX_ERROR, message: 'The request is not a RequestContext' },
        obligations: [],
      };
    return request;
  };

  const explainOne = (request: RequestContext, clock: Clock, resourceId?: string): XacmlExplanation => {
    const explanation = explainEvaluation(top, decide, new EvalContext(request, runtime, nSlots(), clock));
    if (resourceId !== undefined) explanation.resourceId = resourceId;
    return explanation;
  };

  return {
    references: attributeRefs,
    explain(request: string | RequestContext): XacmlExplanation[] {
      const ctx = requestOf(request);
      if (!isRequestContext(ctx)) return [{ decision: ctx.decision, status: ctx.status, steps: [] }];
      const clock: Clock = {};
      const scoped = findScope(ctx);
      if (!scoped) return [explainOne(ctx, clock)];
      let ids: string[];
      try {
        ids = expandResources(scoped, resourceChildren);
      } catch (e) {
        return [
          {
            resourceId: scoped.resourceId,
            decision: 'Indeterminate',
            status: { code: STATUS_PROCESSING_ERROR, message: (e as Error).message },
            steps: [],
          },
        ];
      }
      return ids.map((id) => explainOne(individualRequest(ctx, scoped, id), clock, id));
    },
    evaluate(request: string | RequestContext): XacmlResponse {
      let ctx: RequestContext;
      if (typeof request === 'string') {
        try {
          ctx = parseRequest(request, limits);
        } catch (e) {
          const message = e instanceof XacmlSyntaxError ? e.message : `Invalid request: ${(e as Error)?.message ?? String(e)}`;
          return { results: [{ decision: 'Indeterminate', status: { code: STATUS_SYNTAX_ERROR, message }, obligations: [] }] };
        }
      } else if (!isRequestContext(request)) {
        return {
          results: [
            {
              decision: 'Indeterminate',
              status: { code: STATUS_SYNTAX_ERROR, message: 'The request is not a RequestContext' },
              obligations: [],
            },
          ],
        };
      } else {
        ctx = request;
      }
      const clock: Clock = {};
      const scoped = findScope(ctx);
      if (!scoped) return { results: [evaluateOne(ctx, clock)] };
      let ids: string[];
      try {
        ids = expandResources(scoped, resourceChildren);
      } catch (e) {
        return {
          results: [
            {
              resourceId: scoped.resourceId,
              decision: 'Indeterminate',
              status: { code: STATUS_PROCESSING_ERROR, message: (e as Error).message },
              obligations: [],
            },
          ],
        };
      }
      return { results: ids.map((id) => evaluateOne(individualRequest(ctx, scoped, id), clock, id)) };
    },
  };
}

function repositoryDecision(top: readonly Combinable[], ctx: EvalContext): Result {
  const r = onlyOneApplicable(top, ctx);
  if (r.decision === INDETERMINATE && r.status?.message?.startsWith('More than one applicable policy')) {
    return {
      decision: INDETERMINATE,
      status: {
        code: STATUS_PROCESSING_ERROR,
        message: `More than one top-level policy is applicable${r.status.message.slice('More than one applicable policy'.length)}`,
      },
    };
  }
  return r;
}

function entryOf(root: XmlElement): RepositoryEntry | undefined {
  const kind = root.local === 'Policy' ? 'Policy' : root.local === 'PolicySet' ? 'PolicySet' : undefined;
  if (!kind) return undefined;
  const id = root.attrs.get(kind === 'Policy' ? 'PolicyId' : 'PolicySetId');
  if (!id) return undefined;
  return { kind, id, version: root.attrs.get('Version') ?? '1.0', root };
}

// Frozen: shared by every result without obligations.
const EMPTY_OBLIGATIONS = Object.freeze([]) as unknown as XacmlObligation[];

function toResult(r: Result, resourceId: string | undefined): XacmlResult {
  const out: XacmlResult = {
    decision: DECISION_NAMES[r.decision],
    status: r.status ?? OK_STATUS,
    obligations: r.obligations && r.obligations.length > 0 ? (r.obligations as XacmlObligation[]) : EMPTY_OBLIGATIONS,
  };
  if (r.status && r.status.code === STATUS_OK) out.status = OK_STATUS;
  if (resourceId !== undefined) out.resourceId = resourceId;
  return out;
}

function isRequestContext(v: unknown): v is RequestContext {
  const r = v as RequestContext;
  return (
    typeof r === 'object' &&
    r !== null &&
    Array.isArray(r.subjects) &&
    Array.isArray(r.resources) &&
    typeof r.action === 'object' &&
    r.action !== null &&
    Array.isArray(r.action.attributes) &&
    typeof r.environment === 'object' &&
    r.environment !== null &&
    Array.isArray(r.environment.attributes)
  );
}

interface Scoped {
  index: number;
  scope: string;
  resourceId: string;
  idAttr: RequestAttribute;
}

/** The resource carrying a `scope` attribute, if any (hierarchical resource profile). */
function findScope(ctx: RequestContext): Scoped | undefined {
  for (let i = 0; i < ctx.resources.length; i++) {
    const attrs = ctx.resources[i]!.attributes;
    let scope: RequestAttribute | undefined;
    let idAttr: RequestAttribute | undefined;
    for (let j = 0; j < attrs.length; j++) {
      const a = attrs[j]!;
      if (a.attributeId === RESOURCE_SCOPE) scope ??= a;
      else if (a.attributeId === RESOURCE_ID) idAttr ??= a;
    }
    if (!scope) continue;
    return {
      index: i,
      scope: (scope.values[0] ?? '').trim(),
      resourceId: idAttr?.values[0]?.trim() ?? '',
      idAttr: idAttr ?? { attributeId: RESOURCE_ID, dataType: 'http://www.w3.org/2001/XMLSchema#string', values: [] },
    };
  }
  return undefined;
}

function expandResources(s: Scoped, children: ((id: string) => string[]) | undefined): string[] {
  if (s.scope === 'Immediate') return [s.resourceId];
  if (s.scope !== 'Children' && s.scope !== 'Descendants') throw new Error(`Unknown resource scope "${s.scope}"`);
  if (!children) throw new Error(`Resource scope ${s.scope} needs the resourceChildren option`);
  const out: string[] = [];
  const seen = new Set<string>();
  // Iterative depth-first pre-order (a node, then its subtree, in the order given), so that a
  // deep hierarchy cannot exhaust the stack.
  const stack: Array<{ id: string; depth: number }> = [{ id: s.resourceId, depth: 0 }];
  while (stack.length > 0) {
    const { id, depth } = stack.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(id);
    if (out.length > MAX_RESOURCES) throw new Error(`Hierarchical request expands to more than ${MAX_RESOURCES} resources`);
    if (depth > 0 && s.scope === 'Children') continue;
    const kids = children(id) ?? [];
    for (let i = kids.length - 1; i >= 0; i--) if (!seen.has(kids[i]!)) stack.push({ id: kids[i]!, depth: depth + 1 });
  }
  return out;
}

/** The individual request for one resource node: its resource-id, no scope. */
function individualRequest(ctx: RequestContext, s: Scoped, id: string): RequestContext {
  const resources = ctx.resources.map((r, i) => {
    if (i !== s.index) return r;
    const attributes = r.attributes
      .filter((a) => a.attributeId !== RESOURCE_SCOPE && a.attributeId !== RESOURCE_ID)
      .concat([{ ...s.idAttr, values: [id] }]);
    return r.resourceContent !== undefined ? { attributes, resourceContent: r.resourceContent } : { attributes };
  });
  return { ...ctx, resources };
}

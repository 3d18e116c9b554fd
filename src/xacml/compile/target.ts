/**
 * Compiling `<Target>`: sections (Subjects, Resources, Actions, Environments) are conjunctions,
 * each a disjunction of elements (Subject …), each a conjunction of matches (SubjectMatch …),
 * with the Indeterminate rules of XACML 2.0 section 7.5.
 *
 * @module
 */
import { FN1, XS_BOOLEAN } from '../constants.js';
import { XacmlSyntaxError } from '../errors.js';
import type { EvalContext } from '../eval-context.js';
import { MATCH, NO_MATCH, toIndeterminate } from '../runtime.js';
import type { Indeterminate } from '../runtime.js';
import type { MatchOutcome } from '../runtime.js';
import type { XmlElement } from '../xml.js';
import { checkArguments, eagerFunction, implementationFor, required, typeName, valueType, type CompileScope } from './expression-kit.js';
import { compileAttributeValue, compileDesignator, compileSelector } from './expression.js';
import type { TargetSectionInfo } from './combining.js';
import { describeAlternatives } from './describe.js';

/** A compiled target; `undefined` stands for an empty target (matches everything). */
export type CompiledTarget = ((ctx: EvalContext) => MatchOutcome) | undefined;

/**
 * When a target is exactly one `string-equal`/`anyURI-equal` match of a constant against a
 * designator, this describes it so that a parent can index its children by the constant.
 */
export interface IndexableTarget {
  /** Identity of the designator (its slot key). */
  readonly key: string;
  /** The designator's evaluation (returns the bag; throws Indeterminate). */
  readonly bag: (ctx: EvalContext) => unknown;
  /** The constant compared (a string). */
  readonly value: string;
}

const SECTIONS: Record<string, { element: string; match: string; designator: string; any: string }> = {
  Subjects: { element: 'Subject', match: 'SubjectMatch', designator: 'SubjectAttributeDesignator', any: 'AnySubject' },
  Resources: { element: 'Resource', match: 'ResourceMatch', designator: 'ResourceAttributeDesignator', any: 'AnyResource' },
  Actions: { element: 'Action', match: 'ActionMatch', designator: 'ActionAttributeDesignator', any: 'AnyAction' },
  Environments: { element: 'Environment', match: 'EnvironmentMatch', designator: 'EnvironmentAttributeDesignator', any: 'AnyEnvironment' },
};

const EQUALITY = new Set([`${FN1}string-equal`, `${FN1}anyURI-equal`]);

type Test = (ctx: EvalContext) => MatchOutcome;

/** Compiles a `<Target>` element (or its absence). */
export function compileTarget(
  el: XmlElement | undefined,
  scope: CompileScope,
): { target: CompiledTarget; indexable?: IndexableTarget; sections: TargetSectionInfo[] } {
  if (!el) return { target: undefined, sections: [] };
  const sections: Test[] = [];
  const described: TargetSectionInfo[] = [];
  let indexable: IndexableTarget | undefined;
  let matchCount = 0;
  for (const sec of el.children) {
    if (sec.local === 'Description') continue;
    const spec = SECTIONS[sec.local];
    if (!spec) throw new XacmlSyntaxError(`Unexpected <${sec.local}> in <Target>`, sec.path);
    const alternatives: Test[] = [];
    const alternativeElements: Array<readonly XmlElement[]> = [];
    let any = false;
    for (const alt of sec.children) {
      if (alt.local === spec.any) {
        any = true;
        continue;
      }
      if (alt.local !== spec.element) throw new XacmlSyntaxError(`Unexpected <${alt.local}> in <${sec.local}>`, alt.path);
      const matches: Test[] = [];
      for (const m of alt.children) {
        if (m.local !== spec.match) throw new XacmlSyntaxError(`Unexpected <${m.local}> in <${alt.local}>`, m.path);
        const compiled = compileMatch(m, spec.designator, scope);
        matches.push(compiled.test);
        matchCount++;
        indexable = compiled.indexable;
      }
      if (matches.length === 0) throw new XacmlSyntaxError(`<${alt.local}> needs at least one <${spec.match}>`, alt.path);
      alternatives.push(conjunction(matches));
      alternativeElements.push(alt.children);
    }
    if (any) continue; // AnySubject & co. (XACML 1.x) match everything
    if (alternatives.length === 0) throw new XacmlSyntaxError(`<${sec.local}> needs at least one <${spec.element}>`, sec.path);
    const test = disjunction(alternatives);
    sections.push(test);
    described.push({ section: sec.local, text: describeAlternatives(alternativeElements), test });
  }
  if (sections.length === 0) return { target: undefined, sections: described };
  const target = conjunction(sections);
  return matchCount === 1 && indexable ? { target, indexable, sections: described } : { target, sections: described };
}

/** All must match; any NoMatch gives NoMatch; otherwise Indeterminate. */
function conjunction(tests: Test[]): Test {
  if (tests.length === 1) return tests[0]!;
  return (ctx) => {
    let error: Indeterminate | undefined;
    for (const t of tests) {
      const r = t(ctx);
      if (r === NO_MATCH) return NO_MATCH;
      if (r !== MATCH) error ??= r;
    }
    return error ?? MATCH;
  };
}

/** Any Match gives Match; all NoMatch gives NoMatch; otherwise Indeterminate. */
function disjunction(tests: Test[]): Test {
  if (tests.length === 1) return tests[0]!;
  return (ctx) => {
    let error: Indeterminate | undefined;
    for (const t of tests) {
      const r = t(ctx);
      if (r === MATCH) return MATCH;
      if (r !== NO_MATCH) error ??= r;
    }
    return error ?? NO_MATCH;
  };
}

function compileMatch(m: XmlElement, designatorName: string, scope: CompileScope): { test: Test; indexable?: IndexableTarget } {
  const matchId = required(m, 'MatchId');
  const parts = m.children.filter((c) => c.local !== 'Description');
  if (parts.length !== 2 || parts[0]!.local !== 'AttributeValue') {
    throw new XacmlSyntaxError(`<${m.local}> must hold an <AttributeValue> then a <${designatorName}> or <AttributeSelector>`, m.path);
  }
  const valueEl = parts[0]!;
  const source = parts[1]!;
  const value = compileAttributeValue(valueEl);
  let bagExpr;
  if (source.local === designatorName) bagExpr = compileDesignator(source, scope);
  else if (source.local === 'AttributeSelector') bagExpr = compileSelector(source, scope);
  else throw new XacmlSyntaxError(`<${m.local}> must use a <${designatorName}> or <AttributeSelector>, not <${source.local}>`, source.path);
  const fn = eagerFunction(m, matchId);
  checkArguments(fn, [value.type, valueType(bagExpr.type.dataType, false)], m);
  if (fn.returns.bag || fn.returns.dataType !== XS_BOOLEAN) {
    throw new XacmlSyntaxError(`MatchId ${matchId} must return a boolean, not ${typeName(fn.returns)}`, m.path);
  }
  const v = value.value;
  const bagEv = bagExpr.ev as (ctx: EvalContext) => readonly unknown[];
  const where = `${m.path} (${matchId})`;
  if (EQUALITY.has(fn.id) && typeof v === 'string') {
    // string-equal / anyURI-equal: code-point equality of the runtime strings.
    const test: Test = (ctx) => {
      let bag: readonly unknown[];
      try {
        bag = bagEv(ctx);
      } catch (e) {
        return toIndeterminate(e, where);
      }
      for (let i = 0; i < bag.length; i++) if (bag[i] === v) return MATCH;
      return NO_MATCH;
    };
    const indexable: IndexableTarget | undefined =
      source.local === designatorName ? { key: `${fn.id}\n${designatorKey(source)}`, bag: bagEv, value: v } : undefined;
    return indexable ? { test, indexable } : { test };
  }
  const impl = implementationFor(fn, [value, { constant: false, value: undefined }]);
  const test: Test = (ctx) => {
    let bag: readonly unknown[];
    try {
      bag = bagEv(ctx);
    } catch (e) {
      return toIndeterminate(e, where);
    }
    let error: Indeterminate | undefined;
    for (const b of bag) {
      try {
        if (impl([v, b]) === true) return MATCH;
      } catch (e) {
        error ??= toIndeterminate(e, where);
      }
    }
    return error ?? NO_MATCH;
  };
  return { test };
}

function designatorKey(el: XmlElement): string {
  return [
    el.local,
    el.attrs.get('AttributeId'),
    el.attrs.get('DataType'),
    el.attrs.get('Issuer') ?? '',
    el.attrs.get('SubjectCategory') ?? '',
    el.attrs.get('MustBePresent') ?? '',
  ].join('\n');
}

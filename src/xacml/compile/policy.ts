/**
 * Compiling Rule, Policy and PolicySet elements (with references resolved through a
 * repository, compiled only when referenced) into {@link Combinable} closures.
 *
 * @module
 */
import { POLICY_NAMESPACES, STATUS_SYNTAX_ERROR, XS_BOOLEAN } from '../constants.js';
import { XacmlSyntaxError } from '../errors.js';
import type { EvalContext } from '../eval-context.js';
import * as runtime from '../runtime.js';
import { DENY, DENY_RESULT, MATCH, NA_RESULT, NO_MATCH, PERMIT, PERMIT_RESULT, toIndeterminate } from '../runtime.js';
import type { DecisionCode, MatchOutcome, Obligation, Result } from '../runtime.js';
import type { XmlElement } from '../xml.js';
import { policyCombiners, ruleCombiners } from './combining.js';
import type { Combinable, Combiner, ConditionPartInfo, ElementInfo } from './combining.js';
import { describeElement } from './describe.js';
import { dataTypeOf, required, typeName, type CompileScope, type VariableScope } from './expression-kit.js';
import { compileExpression, compileVariable } from './expression.js';
import { compileTarget } from './target.js';
import type { IndexableTarget } from './target.js';

/** A policy document available to references. */
export interface RepositoryEntry {
  readonly kind: 'Policy' | 'PolicySet';
  readonly id: string;
  readonly version: string;
  readonly root: XmlElement;
}

/** Fewest indexable children for which a PolicySet builds a value → children map. */
const INDEX_MIN = 8;

const ALWAYS: MatchOutcome = MATCH;

/** Compiles policies; one per PDP (it owns the slot registry and the reference cache). */
export class PolicyCompiler {
  /** Slot registry shared by every expression of the PDP. */
  readonly slots = new Map<string, number>();
  private readonly compiled = new Map<RepositoryEntry, Combinable>();
  private readonly active = new Set<RepositoryEntry>();

  constructor(
    private readonly repository: readonly RepositoryEntry[],
    /** Reasons why some reference documents could not be read (for messages). */
    private readonly unreadable: readonly string[],
  ) {}

  /** Compiles a top-level Policy or PolicySet element. */
  compileRoot(root: XmlElement): Combinable {
    const entry = this.repository.find((e) => e.root === root);
    if (entry) return this.compileEntry(entry, root);
    return this.compileTop(root);
  }

  private compileEntry(entry: RepositoryEntry, at: XmlElement): Combinable {
    const done = this.compiled.get(entry);
    if (done) return done;
    if (this.active.has(entry)) throw new CircularReference(`Circular reference to ${entry.kind} "${entry.id}"`, at.path);
    this.active.add(entry);
    try {
      const c = this.compileTop(entry.root);
      this.compiled.set(entry, c);
      return c;
    } finally {
      this.active.delete(entry);
    }
  }

  private compileTop(el: XmlElement): Combinable {
    if (!POLICY_NAMESPACES.has(el.ns)) {
      throw new XacmlSyntaxError(`<${el.local}> is not in the XACML 2.0 policy namespace ("${el.ns}")`, el.path);
    }
    if (el.local === 'Policy') return this.compilePolicy(el);
    if (el.local === 'PolicySet') return this.compilePolicySet(el);
    throw new XacmlSyntaxError(`Expected <Policy> or <PolicySet>, found <${el.local}>`, el.path);
  }

  private checkNs(el: XmlElement): void {
    if (!POLICY_NAMESPACES.has(el.ns)) throw new XacmlSyntaxError(`<${el.qname}> is not an XACML policy element`, el.path);
  }

  /** Compiles a `<Rule>`. */
  private compileRule(el: XmlElement, scope: CompileScope): Combinable {
    const id = required(el, 'RuleId');
    const effectName = required(el, 'Effect');
    if (effectName !== 'Permit' && effectName !== 'Deny')
      throw new XacmlSyntaxError(`Effect must be Permit or Deny, not "${effectName}"`, el.path);
    const effect: DecisionCode = effectName === 'Permit' ? PERMIT : DENY;
    const effectResult = effect === PERMIT ? PERMIT_RESULT : DENY_RESULT;
    let targetEl: XmlElement | undefined;
    let condEl: XmlElement | undefined;
    for (const c of el.children) {
      this.checkNs(c);
      if (c.local === 'Description') continue;
      if (c.local === 'Target' && !targetEl && !condEl) targetEl = c;
      else if (c.local === 'Condition' && !condEl) condEl = c;
      else throw new XacmlSyntaxError(`Unexpected <${c.local}> in <Rule>`, c.path);
    }
    const { target, sections } = compileTarget(targetEl, scope);
    let body: (ctx: EvalContext) => Result;
    let condition: ConditionPartInfo[] | undefined;
    if (condEl) {
      const cond = this.compileCondition(condEl, scope);
      condition = this.conditionParts(condEl, scope, cond);
      const where = condEl.path;
      body = (ctx) => {
        try {
          return cond(ctx) ? effectResult : NA_RESULT;
        } catch (e) {
          return toIndeterminate(e, where).result();
        }
      };
    } else {
      body = () => effectResult;
    }
    return withTarget(id, target, body, { kind: 'Rule', target: sections, ...(condition ? { condition } : {}) }, effect);
  }

  /**
   * The parts an explanation evaluates of a condition: each argument of a top-level `and`
   * (compiled again, on the same slots), else the whole condition.
   */
  private conditionParts(el: XmlElement, scope: CompileScope, whole: (ctx: EvalContext) => boolean): ConditionPartInfo[] {
    const body = el.attrs.has('FunctionId') ? el : el.children.find((c) => c.local !== 'Description');
    if (body !== undefined && body.attrs.get('FunctionId') === 'urn:oasis:names:tc:xacml:1.0:function:and') {
      const args = body.children.filter((c) => c.local !== 'Description');
      if (args.length > 1) return args.map((arg) => ({ text: describeElement(arg), ev: compileExpression(arg, scope).ev }));
    }
    return [{ text: describeElement(body ?? el), ev: whole }];
  }

  private compileCondition(el: XmlElement, scope: CompileScope): (ctx: EvalContext) => boolean {
    // XACML 1.x: the Condition is itself an Apply (it carries the FunctionId).
    const exprEl = el.attrs.has('FunctionId') ? { ...el, local: 'Apply' } : undefined;
    let expr;
    if (exprEl) expr = compileExpression(exprEl, scope);
    else {
      const body = el.children.filter((c) => c.local !== 'Description');
      if (body.length !== 1) throw new XacmlSyntaxError('<Condition> must hold exactly one expression', el.path);
      expr = compileExpression(body[0]!, scope);
    }
    if (expr.type.bag || expr.type.dataType !== XS_BOOLEAN) {
      throw new XacmlSyntaxError(`<Condition> must be a boolean expression, not ${typeName(expr.type)}`, el.path);
    }
    return expr.ev as (ctx: EvalContext) => boolean;
  }

  private compileObligations(el: XmlElement | undefined): { permit?: Obligation[]; deny?: Obligation[] } {
    if (!el) return {};
    const permit: Obligation[] = [];
    const deny: Obligation[] = [];
    for (const o of el.children) {
      this.checkNs(o);
      if (o.local !== 'Obligation') throw new XacmlSyntaxError(`Unexpected <${o.local}> in <Obligations>`, o.path);
      const id = required(o, 'ObligationId');
      const fulfillOn = required(o, 'FulfillOn');
      if (fulfillOn !== 'Permit' && fulfillOn !== 'Deny')
        throw new XacmlSyntaxError(`FulfillOn must be Permit or Deny, not "${fulfillOn}"`, o.path);
      const assignments = o.children.map((a) => {
        if (a.local !== 'AttributeAssignment') throw new XacmlSyntaxError(`Unexpected <${a.local}> in <Obligation>`, a.path);
        const attributeId = required(a, 'AttributeId');
        const dt = dataTypeOf(a);
        try {
          dt.parse(a.text);
        } catch (e) {
          throw new XacmlSyntaxError(`Invalid value "${a.text}" for ${dt.id}: ${(e as Error).message}`, a.path);
        }
        return Object.freeze({ attributeId, dataType: a.attrs.get('DataType')!, value: a.text });
      });
      const ob: Obligation = Object.freeze({ id, fulfillOn, assignments: Object.freeze(assignments) });
      (fulfillOn === 'Permit' ? permit : deny).push(ob);
    }
    const out: { permit?: Obligation[]; deny?: Obligation[] } = {};
    if (permit.length) out.permit = permit;
    if (deny.length) out.deny = deny;
    return out;
  }

  private compilePolicy(el: XmlElement): Combinable {
    const id = required(el, 'PolicyId');
    const algId = required(el, 'RuleCombiningAlgId');
    const combiner = ruleCombiners.get(algId);
    if (!combiner) throw new XacmlSyntaxError(`Unknown rule-combining algorithm "${algId}"`, el.path);
    const defs = new Map<string, XmlElement>();
    for (const c of el.children) {
      if (c.local !== 'VariableDefinition') continue;
      const vid = required(c, 'VariableId');
      if (defs.has(vid)) throw new XacmlSyntaxError(`Duplicate VariableDefinition "${vid}"`, c.path);
      defs.set(vid, c);
    }
    const variables: VariableScope = { defs, compiled: new Map(), active: new Set() };
    const scope: CompileScope = { slots: this.slots, variables };
    let targetEl: XmlElement | undefined;
    let obligationsEl: XmlElement | undefined;
    const rules: Combinable[] = [];
    for (const c of el.children) {
      this.checkNs(c);
      switch (c.local) {
        case 'Description':
        case 'PolicyDefaults':
        case 'CombinerParameters':
        case 'RuleCombinerParameters':
          break;
        case 'Target':
          if (targetEl) throw new XacmlSyntaxError('More than one <Target>', c.path);
          targetEl = c;
          break;
        case 'VariableDefinition':
          compileVariable(c.attrs.get('VariableId')!, c, variables, scope);
          break;
        case 'Rule':
          rules.push(this.compileRule(c, scope));
          break;
        case 'Obligations':
          if (obligationsEl) throw new XacmlSyntaxError('More than one <Obligations>', c.path);
          obligationsEl = c;
          break;
        default:
          throw new XacmlSyntaxError(`Unexpected <${c.local}> in <Policy>`, c.path);
      }
    }
    const { target, sections } = compileTarget(targetEl, { slots: this.slots, variables: undefined });
    const body = withOwnObligations(combiner, rules, this.compileObligations(obligationsEl));
    return withTarget(id, target, body, { kind: 'Policy', target: sections, children: rules });
  }

  private compilePolicySet(el: XmlElement): Combinable {
    const id = required(el, 'PolicySetId');
    const algId = required(el, 'PolicyCombiningAlgId');
    const combiner = policyCombiners.get(algId);
    if (!combiner) throw new XacmlSyntaxError(`Unknown policy-combining algorithm "${algId}"`, el.path);
    const scope: CompileScope = { slots: this.slots, variables: undefined };
    let targetEl: XmlElement | undefined;
    let obligationsEl: XmlElement | undefined;
    const children: Array<{ item: Combinable; indexable?: IndexableTarget }> = [];
    for (const c of el.children) {
      this.checkNs(c);
      switch (c.local) {
        case 'Description':
        case 'PolicySetDefaults':
        case 'CombinerParameters':
        case 'PolicyCombinerParameters':
        case 'PolicySetCombinerParameters':
          break;
        case 'Target':
          if (targetEl) throw new XacmlSyntaxError('More than one <Target>', c.path);
          targetEl = c;
          break;
        case 'Policy':
        case 'PolicySet': {
          const item = c.local === 'Policy' ? this.compilePolicy(c) : this.compilePolicySet(c);
          const indexable = indexableTargetOf(c, this.slots);
          children.push(indexable ? { item, indexable } : { item });
          break;
        }
        case 'PolicyIdReference':
        case 'PolicySetIdReference':
          children.push({ item: this.resolveReference(c) });
          break;
        case 'Obligations':
          if (obligationsEl) throw new XacmlSyntaxError('More than one <Obligations>', c.path);
          obligationsEl = c;
          break;
        default:
          throw new XacmlSyntaxError(`Unexpected <${c.local}> in <PolicySet>`, c.path);
      }
    }
    const { target, sections } = compileTarget(targetEl, scope);
    const items = children.map((c) => c.item);
    const select = buildIndex(children);
    const combine: Combiner = select ? (_items, ctx) => combiner(select(ctx), ctx) : combiner;
    const body = withOwnObligations(combine, items, this.compileObligations(obligationsEl));
    return withTarget(id, target, body, { kind: 'PolicySet', target: sections, children: items });
  }

  private resolveReference(el: XmlElement): Combinable {
    const kind = el.local === 'PolicyIdReference' ? 'Policy' : 'PolicySet';
    const id = el.text.trim();
    if (!id) throw new XacmlSyntaxError(`Empty <${el.local}>`, el.path);
    const version = el.attrs.get('Version');
    const earliest = el.attrs.get('EarliestVersion');
    const latest = el.attrs.get('LatestVersion');
    const candidates = this.repository.filter(
      (e) =>
        e.kind === kind &&
        e.id === id &&
        (version === undefined || versionMatches(e.version, version)) &&
        (earliest === undefined || compareVersions(e.version, earliest.replace(/[*+]/g, '0')) >= 0) &&
        (latest === undefined || compareVersions(e.version, latest.replace(/[*+]/g, '999999999')) <= 0),
    );
    if (candidates.length === 0) {
      const missing = `No ${kind} "${id}"${version ? ` with Version ${version}` : ''} among the policies and references`;
      // The policy may be in a reference document that could not be read: like any invalid
      // referenced document, that is an error only if the evaluation ever reaches it.
      if (this.unreadable.length > 0) {
        return invalidReference(
          kind,
          id,
          `${missing} (${this.unreadable.length} reference document(s) could not be read: ${this.unreadable.join('; ')}) (at ${el.path})`,
        );
      }
      throw new XacmlSyntaxError(missing, el.path);
    }
    // The latest matching version wins.
    const entry = candidates.reduce((a, b) => (compareVersions(b.version, a.version) > 0 ? b : a));
    try {
      return this.compileEntry(entry, el);
    } catch (e) {
      if (e instanceof XacmlSyntaxError && !(e instanceof CircularReference)) {
        // An invalid referenced document must not break the policies that never reach it
        // (conformance IIE003): it evaluates to Indeterminate (syntax-error) where reached.
        return invalidReference(kind, id, `Referenced ${kind} "${id}" is invalid: ${e.message} (referenced at ${el.path})`);
      }
      throw e;
    }
  }
}

/** A reference cycle: always rejected at load time. */
class CircularReference extends XacmlSyntaxError {}

/** Stands for a referenced document that is invalid: Indeterminate (syntax-error) when reached. */
function invalidReference(kind: 'Policy' | 'PolicySet', id: string, message: string): Combinable {
  const signal = new runtime.Indeterminate(STATUS_SYNTAX_ERROR, message);
  const result: Result = signal.result();
  return { id, evaluate: () => result, body: () => result, match: () => signal, info: { kind, target: [] } };
}

/** Wraps a target and a body into a {@link Combinable}. */
function withTarget(
  id: string,
  target: ((ctx: EvalContext) => MatchOutcome) | undefined,
  body: (ctx: EvalContext) => Result,
  info: ElementInfo,
  effect?: DecisionCode,
): Combinable {
  const evaluate = target
    ? (ctx: EvalContext): Result => {
        const m = target(ctx);
        if (m === MATCH) return body(ctx);
        if (m === NO_MATCH) return NA_RESULT;
        return m.result();
      }
    : body;
  const match = target ?? ((): MatchOutcome => ALWAYS);
  const c: Combinable = effect === undefined ? { id, evaluate, match, body, info } : { id, evaluate, match, body, effect, info };
  return c;
}

/** Combines the children and adds the element's own obligations for the decision reached. */
function withOwnObligations(
  combiner: Combiner,
  items: readonly Combinable[],
  own: { permit?: Obligation[]; deny?: Obligation[] },
): (ctx: EvalContext) => Result {
  const { permit, deny } = own;
  if (!permit && !deny) return (ctx) => combiner(items, ctx);
  return (ctx) => {
    const r = combiner(items, ctx);
    const mine = r.decision === PERMIT ? permit : r.decision === DENY ? deny : undefined;
    if (!mine) return r;
    return { decision: r.decision, obligations: r.obligations ? [...r.obligations, ...mine] : mine };
  };
}

/** Whether a child Policy/PolicySet's target is one indexable match (re-read from the element). */
function indexableTargetOf(el: XmlElement, slots: Map<string, number>): IndexableTarget | undefined {
  const t = el.children.find((c) => c.local === 'Target');
  if (!t) return undefined;
  return compileTarget(t, { slots, variables: undefined }).indexable;
}

/**
 * When many children share one indexable target shape, returns a function that picks, per
 * evaluation, the children whose target can match (in document order); the others would be
 * NotApplicable under every combining algorithm, so skipping them changes nothing.
 */
function buildIndex(
  children: ReadonlyArray<{ item: Combinable; indexable?: IndexableTarget }>,
): ((ctx: EvalContext) => readonly Combinable[]) | undefined {
  const groups = new Map<string, number[]>();
  children.forEach((c, i) => {
    if (!c.indexable) return;
    const g = groups.get(c.indexable.key);
    if (g) g.push(i);
    else groups.set(c.indexable.key, [i]);
  });
  let best: number[] | undefined;
  for (const g of groups.values()) if (!best || g.length > best.length) best = g;
  if (!best || best.length < INDEX_MIN) return undefined;
  const all = children.map((c) => c.item);
  const inGroup = new Set(best);
  const others = children.map((_, i) => i).filter((i) => !inGroup.has(i));
  // The target of an indexed child is exactly the match the index answered: evaluate its body.
  const known: Combinable[] = children.map((c) => ({ id: c.item.id, evaluate: c.item.body, body: c.item.body, match: () => ALWAYS }));
  const byValue = new Map<string, number[]>();
  for (const i of best) {
    const v = children[i]!.indexable!.value;
    const list = byValue.get(v);
    if (list) list.push(i);
    else byValue.set(v, [i]);
  }
  const otherItems = others.map((i) => all[i]!);
  const itemOf = (i: number): Combinable => (inGroup.has(i) ? known[i]! : all[i]!);
  // Precomputed selections for a single-valued bag.
  const single = new Map<string, readonly Combinable[]>();
  for (const [v, idx] of byValue) single.set(v, [...idx, ...others].sort((a, b) => a - b).map(itemOf));
  const bag = children[best[0]!]!.indexable!.bag as (ctx: EvalContext) => readonly unknown[];
  return (ctx) => {
    let values: readonly unknown[];
    try {
      values = bag(ctx);
    } catch {
      return all; // the normal evaluation reports the Indeterminate where it arises
    }
    if (values.length === 1) return single.get(values[0] as string) ?? otherItems;
    if (values.length === 0) return otherItems;
    const picked = new Set<number>(others);
    for (const v of values) for (const i of byValue.get(v as string) ?? []) picked.add(i);
    return [...picked].sort((a, b) => a - b).map(itemOf);
  };
}

/** Compares dotted version numbers. */
export function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** XACML 2.0 VersionMatchType: `*` is any one number, `+` any numbers from there on. */
function versionMatches(version: string, pattern: string): boolean {
  const re = pattern
    .split('.')
    .map((p) => (p === '*' ? '\\d+' : p === '+' ? '\\d+(?:\\.\\d+)*' : p.replace(/\D/g, '')))
    .join('\\.');
  return new RegExp(`^${re}$`).test(version);
}

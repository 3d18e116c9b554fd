/**
 * Compiling XACML expressions (Apply, AttributeValue, designators, AttributeSelector,
 * VariableReference) into closures, with static type checks at compile time.
 *
 * @module
 */
import {
  CURRENT_DATE,
  CURRENT_DATETIME,
  CURRENT_TIME,
  STATUS_MISSING_ATTRIBUTE,
  STATUS_PROCESSING_ERROR,
  STATUS_SYNTAX_ERROR,
  XS_DATE,
  XS_DATETIME,
  XS_STRING,
  XS_TIME,
} from '../constants.js';
import { canonicalDataType, dataTypes } from '../datatypes/index.js';
import type { TemporalDataType } from '../datatypes/types.js';
import { XacmlSyntaxError } from '../errors.js';
import type { EvalContext } from '../eval-context.js';
import { ACCESS_SUBJECT } from '../request-context.js';
import { Indeterminate, toIndeterminate } from '../runtime.js';
import { directSelector, selectAttributeValues, selectValues } from '../xpath.js';
import { intern } from '../xml.js';
import type { XmlElement } from '../xml.js';
import {
  applyEager,
  checkArguments,
  dataTypeOf,
  eagerFunction,
  required,
  slotFor,
  typeName,
  valueType,
  xpathNamespaces,
  type CompileScope,
  type Expr,
  type VariableScope,
} from './expression-kit.js';
import { nonEagerFunctions } from './higher-order.js';

/** Parses `MustBePresent` (xs:boolean). */
function booleanAttr(el: XmlElement, attr: string): boolean {
  const v = el.attrs.get(attr)?.trim();
  if (v === undefined) return false;
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new XacmlSyntaxError(`${attr} must be a boolean, not "${v}"`, el.path);
}

/** The lexical content of an AttributeValue (text, or its XML children serialized). */
function lexicalOf(el: XmlElement): string {
  return el.text;
}

/** Compiles an `<AttributeValue>` into a constant. */
export function compileAttributeValue(el: XmlElement): Expr {
  const dt = dataTypeOf(el);
  let value: unknown;
  try {
    value = dt.parse(lexicalOf(el));
    if (typeof value === 'string') value = intern(value);
  } catch (e) {
    throw new XacmlSyntaxError(`Invalid ${typeName(valueType(dt.id, false))} value "${el.text}": ${(e as Error).message}`, el.path);
  }
  return { type: valueType(dt.id, false), ev: () => value, constant: true, value };
}

const DESIGNATORS: Record<string, 'subject' | 'resource' | 'action' | 'environment'> = {
  SubjectAttributeDesignator: 'subject',
  ResourceAttributeDesignator: 'resource',
  ActionAttributeDesignator: 'action',
  EnvironmentAttributeDesignator: 'environment',
};

/** Whether an element is one of the four attribute designators. */
export function isDesignator(el: XmlElement): boolean {
  return el.local in DESIGNATORS;
}

const EMPTY: readonly unknown[] = Object.freeze([]);

/** One attribute designator a compiled policy holds (see {@link AttributeReferences}). */
export interface AttributeDesignatorReference {
  /** The designator's category. */
  readonly category: 'subject' | 'resource' | 'action' | 'environment';
  /** Its `AttributeId`. */
  readonly attributeId: string;
  /** Its `DataType`. */
  readonly dataType: string;
  /** Its `Issuer`, when it names one. */
  readonly issuer?: string;
  /** Its `SubjectCategory` (subject designators only; the access-subject by default). */
  readonly subjectCategory?: string;
}

/** An attribute that an `AttributeSelector` reads by id (see {@link AttributeReferences.selected}). */
export interface AttributeSelectedReference {
  /** The section it is read from. */
  readonly category: 'subject' | 'resource' | 'action' | 'environment';
  /** Its `AttributeId`. */
  readonly attributeId: string;
}

/**
 * What a compiled set of policies can read of a request, referenced policies included: every
 * attribute designator, the attributes that selectors read by id, and whether anything reads the
 * request document as a whole (any other `AttributeSelector`, or an XPath function), in which
 * case every attribute may matter.
 */
export interface AttributeReferences {
  /** The distinct designators. */
  readonly designators: readonly AttributeDesignatorReference[];
  /**
   * The attributes read by the selectors that read one attribute by id, such as
   * `//xacml-context:Action/xacml-context:Attribute[@AttributeId='…']/xacml-context:AttributeValue`
   * (any subject category; a selector of every section gives one entry per section).
   */
  readonly selected: readonly AttributeSelectedReference[];
  /** Whether an `AttributeSelector` other than those, or an XPath function, reads the request document. */
  readonly selectors: boolean;
}

/** The {@link AttributeReferences} recorded in a slot registry once compiling is over. */
export function attributeReferences(slots: ReadonlyMap<string, number>): AttributeReferences {
  const designators: AttributeDesignatorReference[] = [];
  const selected = new Map<string, AttributeSelectedReference>();
  let selectors = false;
  for (const key of slots.keys()) {
    const parts = key.split('\n');
    if (parts[0] === 's') {
      const [, section, attributeId] = parts as [string, string, string];
      for (const category of section === '*'
        ? (['subject', 'resource', 'action', 'environment'] as const)
        : [section as AttributeSelectedReference['category']]) {
        selected.set(`${category}\n${attributeId}`, Object.freeze({ category, attributeId }));
      }
      continue;
    }
    if (parts[0] !== 'd') {
      selectors = true;
      continue;
    }
    const [, category, subjectCategory, attributeId, dataType, issuer] = parts as [
      string,
      AttributeDesignatorReference['category'],
      string,
      string,
      string,
      string,
    ];
    const reference: { -readonly [K in keyof AttributeDesignatorReference]: AttributeDesignatorReference[K] } = {
      category,
      attributeId,
      dataType,
    };
    if (issuer !== '') reference.issuer = issuer;
    if (category === 'subject') reference.subjectCategory = subjectCategory;
    designators.push(Object.freeze(reference));
  }
  return Object.freeze({ designators: Object.freeze(designators), selected: Object.freeze([...selected.values()]), selectors });
}

/** Compiles one of the four `*AttributeDesignator` elements. */
export function compileDesignator(el: XmlElement, scope: CompileScope): Expr {
  const category = DESIGNATORS[el.local]!;
  const attributeId = required(el, 'AttributeId');
  const dt = dataTypeOf(el);
  const dataType = dt.id;
  const issuer = el.attrs.get('Issuer');
  const mustBePresent = booleanAttr(el, 'MustBePresent');
  const subjectCategory = category === 'subject' ? (el.attrs.get('SubjectCategory') ?? ACCESS_SUBJECT) : '';
  const slot = slotFor(scope, `d\n${category}\n${subjectCategory}\n${attributeId}\n${dataType}\n${issuer ?? ''}`);
  const clockType = category === 'environment' ? clockDataType(attributeId, dataType) : undefined;
  const where = `${el.path} (${category} attribute ${attributeId})`;
  const isString = dataType === XS_STRING;

  const resolve = (ctx: EvalContext): readonly unknown[] => {
    let out: unknown[] | undefined;
    let error: Indeterminate | undefined;
    const attrs = ctx.attributes(category, attributeId, subjectCategory);
    // xs:string values are their lexical form: one matching attribute is already the bag.
    if (isString && attrs.length === 1 && attrs[0]!.values.length > 0) {
      const a = attrs[0]!;
      if ((a.dataType === dataType || canonicalDataType(a.dataType) === dataType) && (issuer === undefined || a.issuer === issuer))
        return a.values;
    }
    for (let i = 0; i < attrs.length; i++) {
      const a = attrs[i]!;
      if (a.dataType !== dataType && canonicalDataType(a.dataType) !== dataType) continue;
      if (issuer !== undefined && a.issuer !== issuer) continue;
      const values = a.values;
      for (let j = 0; j < values.length; j++) {
        try {
          (out ??= []).push(dt.parse(values[j]!));
        } catch (e) {
          error ??= new Indeterminate(
            STATUS_SYNTAX_ERROR,
            `Request value "${values[j]}" of ${attributeId} is not a valid ${dataType}: ${(e as Error).message}`,
          );
        }
      }
    }
    if (error) throw error;
    if (out) return out;
    // The request's own current-time/date/dateTime are never overridden.
    if (clockType && attrs.length === 0) return [clockType.fromDate(ctx.now())];
    const finder = ctx.runtime.attributeFinder;
    if (finder) {
      let found: string[] | undefined;
      try {
        const q: Parameters<typeof finder>[0] = { category, attributeId, dataType };
        if (issuer !== undefined) q.issuer = issuer;
        if (category === 'subject') q.subjectCategory = subjectCategory;
        found = finder(q);
      } catch (e) {
        throw new Indeterminate(
          STATUS_PROCESSING_ERROR,
          `attributeFinder failed for ${attributeId}: ${(e as Error)?.message ?? String(e)} (at ${el.path})`,
        );
      }
      if (found && found.length > 0) {
        try {
          return found.map((v) => dt.parse(v));
        } catch (e) {
          throw new Indeterminate(
            STATUS_PROCESSING_ERROR,
            `attributeFinder value of ${attributeId} is not a valid ${dataType}: ${(e as Error).message}`,
          );
        }
      }
    }
    return EMPTY;
  };

  const ev = (ctx: EvalContext): readonly unknown[] => {
    let bag = ctx.slots[slot];
    if (bag === undefined) bag = ctx.slots[slot] = resolve(ctx);
    if (bag.length === 0 && mustBePresent) {
      throw new Indeterminate(
        STATUS_MISSING_ATTRIBUTE,
        `Missing attribute ${attributeId} (${typeName(valueType(dataType, false))}) required at ${where}`,
      );
    }
    return bag;
  };
  return { type: valueType(dataType, true), ev, constant: false };
}

function clockDataType(attributeId: string, dataType: string): TemporalDataType | undefined {
  const expected =
    attributeId === CURRENT_TIME
      ? XS_TIME
      : attributeId === CURRENT_DATE
        ? XS_DATE
        : attributeId === CURRENT_DATETIME
          ? XS_DATETIME
          : undefined;
  if (expected === undefined || dataType !== expected) return undefined;
  const dt = dataTypes.get(expected) as TemporalDataType | undefined;
  return dt && typeof dt.fromDate === 'function' ? dt : undefined;
}

/** Compiles an `<AttributeSelector>`. */
export function compileSelector(el: XmlElement, scope: CompileScope): Expr {
  const path = required(el, 'RequestContextPath');
  const dt = dataTypeOf(el);
  const mustBePresent = booleanAttr(el, 'MustBePresent');
  const ns = xpathNamespaces(el);
  // A path reading one attribute by id is answered from the request context, without a document.
  const direct = directSelector(path, ns);
  const slot = direct
    ? slotFor(scope, `s\n${direct.category ?? '*'}\n${direct.attributeId}\n${direct.text}\n${direct.anywhere}\n${dt.id}`)
    : slotFor(scope, `x\n${path}\n${dt.id}\n${JSON.stringify(ns)}`);
  const resolve = (ctx: EvalContext): readonly unknown[] => {
    let values: string[] | undefined;
    try {
      if (direct) values = selectAttributeValues(ctx.request, direct);
      values ??= selectValues(ctx.document(), path, ns);
    } catch (e) {
      throw toIndeterminate(e, `${el.path} (RequestContextPath "${path}")`);
    }
    try {
      return values.map((v) => dt.parse(v));
    } catch (e) {
      throw new Indeterminate(
        STATUS_PROCESSING_ERROR,
        `Value selected by "${path}" is not a valid ${dt.id}: ${(e as Error).message} (at ${el.path})`,
      );
    }
  };
  const ev = (ctx: EvalContext): readonly unknown[] => {
    let bag = ctx.slots[slot];
    if (bag === undefined) bag = ctx.slots[slot] = resolve(ctx);
    if (bag.length === 0 && mustBePresent) {
      throw new Indeterminate(STATUS_MISSING_ATTRIBUTE, `No value selected by "${path}" at ${el.path}`);
    }
    return bag;
  };
  return { type: valueType(dt.id, true), ev, constant: false };
}

/** Compiles any expression element. */
export function compileExpression(el: XmlElement, scope: CompileScope): Expr {
  switch (el.local) {
    case 'Apply':
      return compileApply(el, scope);
    case 'AttributeValue':
      return compileAttributeValue(el);
    case 'SubjectAttributeDesignator':
    case 'ResourceAttributeDesignator':
    case 'ActionAttributeDesignator':
    case 'EnvironmentAttributeDesignator':
      return compileDesignator(el, scope);
    case 'AttributeSelector':
      return compileSelector(el, scope);
    case 'VariableReference':
      return compileVariableReference(el, scope);
    case 'Function':
      throw new XacmlSyntaxError('<Function> is only allowed as the first argument of a higher-order bag function', el.path);
    default:
      throw new XacmlSyntaxError(`<${el.local}> is not an expression`, el.path);
  }
}

function compileVariableReference(el: XmlElement, scope: CompileScope): Expr {
  const id = required(el, 'VariableId');
  const vars = scope.variables;
  const def = vars?.defs.get(id);
  if (!vars || !def) throw new XacmlSyntaxError(`Reference to undefined variable "${id}"`, el.path);
  return compileVariable(id, def, vars, scope);
}

/** Compiles (once) the VariableDefinition `id`. */
export function compileVariable(id: string, def: XmlElement, vars: VariableScope, scope: CompileScope): Expr {
  const done = vars.compiled.get(id);
  if (done) return done;
  if (vars.active.has(id)) throw new XacmlSyntaxError(`VariableDefinition "${id}" refers to itself`, def.path);
  vars.active.add(id);
  const body = def.children.filter((c) => c.local !== 'Description');
  if (body.length !== 1) throw new XacmlSyntaxError('<VariableDefinition> must hold exactly one expression', def.path);
  const expr = compileExpression(body[0]!, scope);
  vars.active.delete(id);
  vars.compiled.set(id, expr);
  return expr;
}

function compileApply(el: XmlElement, scope: CompileScope): Expr {
  const id = required(el, 'FunctionId');
  const argEls = el.children.filter((c) => c.local !== 'Description');
  const special = nonEagerFunctions.get(id);
  if (special) return special(el, argEls, scope, compileExpression);
  const fn = eagerFunction(el, id);
  const args = argEls.map((a) => compileExpression(a, scope));
  checkArguments(
    fn,
    args.map((a) => a.type),
    el,
  );
  return applyEager(fn, args, el.path);
}

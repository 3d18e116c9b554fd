/**
 * The parts every expression compiler shares: the compiled expression and its scope, static types
 * and their checks, the slot registry, and eager function application. The compilers of
 * expression elements (`expression.ts`) and of the non-eager functions (`higher-order.ts`) both
 * build on it; `higher-order.ts` gets `compileExpression` from its caller, so neither imports the
 * other.
 *
 * @module
 */
import { canonicalDataType, dataTypes } from '../datatypes/index.js';
import type { DataType } from '../datatypes/types.js';
import { XacmlSyntaxError } from '../errors.js';
import type { EvalContext } from '../eval-context.js';
import { functions } from '../functions/index.js';
import type { FunctionSpec, ValueType } from '../functions/types.js';
import { toIndeterminate } from '../runtime.js';
import type { XmlElement } from '../xml.js';

/** A compiled expression. */
export interface Expr {
  /** Static type. */
  readonly type: ValueType;
  /** Evaluates; throws an `Indeterminate`. */
  readonly ev: (ctx: EvalContext) => unknown;
  /** Whether the value is known at compile time (then `value` holds it). */
  readonly constant: boolean;
  /** The constant value. */
  readonly value?: unknown;
}

/** The VariableDefinitions of one policy, compiled on first reference. */
export interface VariableScope {
  readonly defs: ReadonlyMap<string, XmlElement>;
  readonly compiled: Map<string, Expr>;
  readonly active: Set<string>;
}

/** What the compiler needs beyond the element. */
export interface CompileScope {
  /** PDP-wide registry of bag slots (one per distinct designator/selector). */
  readonly slots: Map<string, number>;
  /** The enclosing policy's variables (none in a policy set's target). */
  readonly variables: VariableScope | undefined;
}

/** Compiles an expression element (`compileExpression`, handed to the non-eager functions' compilers). */
export type CompileExpression = (el: XmlElement, scope: CompileScope) => Expr;

/** Builds a static type. */
export function valueType(dataType: string, bag: boolean): ValueType {
  return { dataType, bag };
}

/** `boolean` / `bag of T` in messages. */
export function typeName(t: ValueType): string {
  const short = t.dataType.replace(/^.*[#:]/, '');
  return t.bag ? `bag of ${short}` : short;
}

/** Whether two static types are the same. */
function sameType(a: ValueType, b: ValueType): boolean {
  return a.bag === b.bag && a.dataType === b.dataType;
}

/** The data type named by `DataType` on an element, canonical; syntax error when unknown/absent. */
export function dataTypeOf(el: XmlElement, attr = 'DataType'): DataType {
  const uri = el.attrs.get(attr);
  if (!uri) throw new XacmlSyntaxError(`<${el.local}> without ${attr}`, el.path);
  const dt = dataTypes.get(uri) ?? dataTypes.get(canonicalDataType(uri));
  if (!dt) throw new XacmlSyntaxError(`Unknown data type "${uri}"`, el.path);
  return dt;
}

/** A required attribute of an element. */
export function required(el: XmlElement, attr: string): string {
  const v = el.attrs.get(attr);
  if (v === undefined || v === '') throw new XacmlSyntaxError(`<${el.local}> without ${attr}`, el.path);
  return v;
}

/** The slot of `key` in the registry, added when new. */
export function slotFor(scope: CompileScope, key: string): number {
  let slot = scope.slots.get(key);
  if (slot === undefined) {
    slot = scope.slots.size;
    scope.slots.set(key, slot);
  }
  return slot;
}

/**
 * Slot-registry key recording that some expression reads the whole request document (an XPath
 * function): its slot is never filled, it only tells `attributeReferences` that the PDP
 * needs every attribute of the request.
 */
const DOCUMENT_KEY = 'p\nrequest-document';

/** Records that an expression reads the whole request document (XPath functions). */
export function markDocumentUse(scope: CompileScope): void {
  slotFor(scope, DOCUMENT_KEY);
}

/** The namespace declarations in scope of an element, for XPath (default namespace excluded). */
export function xpathNamespaces(el: XmlElement): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [p, uri] of Object.entries(el.nsScope)) if (p !== '') out[p] = uri;
  return out;
}

/** Looks up an eager function; syntax error when unknown. */
export function eagerFunction(el: XmlElement, id: string): FunctionSpec {
  const fn = functions.get(id);
  if (!fn) throw new XacmlSyntaxError(`Unknown function "${id}"`, el.path);
  return fn;
}

/** Checks argument count and types of an eager function application. */
export function checkArguments(fn: FunctionSpec, types: readonly ValueType[], el: XmlElement): void {
  const n = types.length;
  if (fn.variadic ? n < Math.max(fn.minArgs, fn.params.length) : n !== fn.params.length) {
    const want = fn.variadic ? `at least ${Math.max(fn.minArgs, fn.params.length)}` : String(fn.params.length);
    throw new XacmlSyntaxError(`${fn.id} takes ${want} argument(s), got ${n}`, el.path);
  }
  for (let i = 0; i < n; i++) {
    const want = i < fn.params.length ? fn.params[i]! : fn.variadic!;
    if (!sameType(want, types[i]!)) {
      throw new XacmlSyntaxError(`Argument ${i + 1} of ${fn.id} must be ${typeName(want)}, not ${typeName(types[i]!)}`, el.path);
    }
  }
}

/**
 * The implementation of `fn` for a call site whose arguments `args` are known when the policy is
 * compiled or not: specialized for the constant ones when the function can be (a constant regular
 * expression is compiled here, once, not per request).
 */
export function implementationFor(fn: FunctionSpec, args: readonly Pick<Expr, 'constant' | 'value'>[]): FunctionSpec['impl'] {
  if (fn.specialize === undefined || !args.some((a) => a.constant)) return fn.impl;
  return fn.specialize(
    args.map((a) => a.constant),
    args.map((a) => (a.constant ? a.value : undefined)),
  );
}

/** Builds the closure of an eager function application (folded when every argument is constant). */
export function applyEager(fn: FunctionSpec, args: readonly Expr[], where: string): Expr {
  const impl = implementationFor(fn, args);
  const call = (argv: unknown[]): unknown => {
    try {
      return impl(argv);
    } catch (e) {
      throw toIndeterminate(e, `${where} (${fn.id})`);
    }
  };
  if (args.every((a) => a.constant)) {
    try {
      const value = impl(args.map((a) => a.value));
      return { type: fn.returns, ev: () => value, constant: true, value };
    } catch {
      // A constant expression that fails is left to fail at evaluation (Indeterminate, XACML 2.0's
      // processing error), not when the policy loads.
    }
  }
  const evs = args.map((a) => a.ev);
  let ev: (ctx: EvalContext) => unknown;
  switch (evs.length) {
    case 0:
      ev = () => call([]);
      break;
    case 1: {
      const [a] = evs as [(c: EvalContext) => unknown];
      ev = (ctx) => call([a(ctx)]);
      break;
    }
    case 2: {
      const [a, b] = evs as [(c: EvalContext) => unknown, (c: EvalContext) => unknown];
      ev = (ctx) => call([a(ctx), b(ctx)]);
      break;
    }
    default:
      ev = (ctx) => {
        const argv = new Array<unknown>(evs.length);
        for (let i = 0; i < evs.length; i++) argv[i] = evs[i]!(ctx);
        return call(argv);
      };
  }
  return { type: fn.returns, ev, constant: false };
}

/**
 * The functions that are not eager, so the evaluator implements them itself: the logical
 * `and`/`or`/`n-of`/`not` (short-circuit), the higher-order bag functions (`any-of` …, `map`)
 * and the XPath functions over the request document.
 *
 * @module
 */
import { FN1, STATUS_PROCESSING_ERROR, XS_BOOLEAN, XS_INTEGER, XS_STRING } from '../constants.js';
import { XacmlSyntaxError } from '../errors.js';
import type { EvalContext } from '../eval-context.js';
import type { FunctionSpec, ValueType } from '../functions/types.js';
import { Indeterminate, toIndeterminate } from '../runtime.js';
import { xpathNodeCount, xpathNodeEqual, xpathNodeMatch } from '../xpath.js';
import type { XmlElement } from '../xml.js';
import {
  checkArguments,
  eagerFunction,
  implementationFor,
  markDocumentUse,
  required,
  typeName,
  valueType,
  xpathNamespaces,
  type CompileExpression,
  type CompileScope,
  type Expr,
} from './expression-kit.js';

/** Compiles an `<Apply>` of one non-eager function: its arguments are compiled by `compile`, as the function needs them. */
type Compiler = (el: XmlElement, args: readonly XmlElement[], scope: CompileScope, compile: CompileExpression) => Expr;

const BOOLEAN: ValueType = { dataType: XS_BOOLEAN, bag: false };
const INTEGER: ValueType = { dataType: XS_INTEGER, bag: false };
const STRING: ValueType = { dataType: XS_STRING, bag: false };

function compileArgs(args: readonly XmlElement[], scope: CompileScope, compile: CompileExpression): Expr[] {
  return args.map((a) => compile(a, scope));
}

function expectType(e: Expr, want: ValueType, fn: string, i: number, el: XmlElement): void {
  if (e.type.bag !== want.bag || e.type.dataType !== want.dataType) {
    throw new XacmlSyntaxError(`Argument ${i + 1} of ${fn} must be ${typeName(want)}, not ${typeName(e.type)}`, el.path);
  }
}

function booleans(
  el: XmlElement,
  args: readonly XmlElement[],
  scope: CompileScope,
  compile: CompileExpression,
  fn: string,
  from = 0,
): Array<(c: EvalContext) => boolean> {
  const exprs = compileArgs(args, scope, compile);
  exprs.forEach((e, i) => {
    if (i >= from) expectType(e, BOOLEAN, fn, i, el);
  });
  return exprs.map((e) => e.ev as (c: EvalContext) => boolean);
}

const and: Compiler = (el, args, scope, compile) => {
  const evs = booleans(el, args, scope, compile, 'and');
  const n = evs.length;
  const ev = (ctx: EvalContext): boolean => {
    // First to last; the first False stops the evaluation.
    for (let i = 0; i < n; i++) if (!evs[i]!(ctx)) return false;
    return true;
  };
  return { type: BOOLEAN, ev, constant: false };
};

const or: Compiler = (el, args, scope, compile) => {
  const evs = booleans(el, args, scope, compile, 'or');
  const n = evs.length;
  const ev = (ctx: EvalContext): boolean => {
    for (let i = 0; i < n; i++) if (evs[i]!(ctx)) return true;
    return false;
  };
  return { type: BOOLEAN, ev, constant: false };
};

const not: Compiler = (el, args, scope, compile) => {
  if (args.length !== 1) throw new XacmlSyntaxError(`not takes 1 argument, got ${args.length}`, el.path);
  const [a] = booleans(el, args, scope, compile, 'not') as [(c: EvalContext) => boolean];
  return { type: BOOLEAN, ev: (ctx) => !a(ctx), constant: false };
};

const nOf: Compiler = (el, args, scope, compile) => {
  if (args.length < 1) throw new XacmlSyntaxError('n-of takes at least 1 argument', el.path);
  const exprs = compileArgs(args, scope, compile);
  expectType(exprs[0]!, INTEGER, 'n-of', 0, el);
  exprs.forEach((e, i) => {
    if (i > 0) expectType(e, BOOLEAN, 'n-of', i, el);
  });
  const nEv = exprs[0]!.ev as (c: EvalContext) => bigint;
  const evs = exprs.slice(1).map((e) => e.ev as (c: EvalContext) => boolean);
  const ev = (ctx: EvalContext): boolean => {
    const n = nEv(ctx);
    if (n > BigInt(evs.length)) {
      throw new Indeterminate(STATUS_PROCESSING_ERROR, `n-of needs ${n} true arguments but has only ${evs.length} (at ${el.path})`);
    }
    if (n <= 0n) return true;
    let need = Number(n);
    for (const e of evs) if (e(ctx) && --need === 0) return true;
    return false;
  };
  return { type: BOOLEAN, ev, constant: false };
};

/** The logical functions usable as the `<Function>` argument of a higher-order function. */
const LOGICAL_SPECS: ReadonlyMap<string, FunctionSpec> = new Map<string, FunctionSpec>([
  [`${FN1}not`, { id: `${FN1}not`, params: [BOOLEAN], minArgs: 1, returns: BOOLEAN, impl: (a) => !a[0] }],
  [`${FN1}and`, { id: `${FN1}and`, params: [], variadic: BOOLEAN, minArgs: 0, returns: BOOLEAN, impl: (a) => a.every(Boolean) }],
  [`${FN1}or`, { id: `${FN1}or`, params: [], variadic: BOOLEAN, minArgs: 0, returns: BOOLEAN, impl: (a) => a.some(Boolean) }],
]);

function functionArgument(el: XmlElement, args: readonly XmlElement[], name: string): FunctionSpec {
  const f = args[0];
  if (!f || f.local !== 'Function') throw new XacmlSyntaxError(`The first argument of ${name} must be a <Function>`, el.path);
  const id = required(f, 'FunctionId');
  return LOGICAL_SPECS.get(id) ?? eagerFunction(f, id);
}

type BagMode = 'any-of' | 'all-of' | 'any-of-any' | 'all-of-any' | 'any-of-all' | 'all-of-all';

function bagFunction(mode: BagMode): Compiler {
  return (el, args, scope, compile) => {
    const name = `${FN1}${mode}`;
    if (args.length !== 3) throw new XacmlSyntaxError(`${mode} takes 3 arguments, got ${args.length}`, el.path);
    const fn = functionArgument(el, args, mode);
    const [a, b] = compileArgs(args.slice(1), scope, compile) as [Expr, Expr];
    const firstIsBag = mode !== 'any-of' && mode !== 'all-of';
    if (a.type.bag !== firstIsBag)
      throw new XacmlSyntaxError(`Argument 2 of ${mode} must be ${firstIsBag ? 'a bag' : 'a single value'}`, el.path);
    if (!b.type.bag) throw new XacmlSyntaxError(`Argument 3 of ${mode} must be a bag`, el.path);
    checkArguments(fn, [valueType(a.type.dataType, false), valueType(b.type.dataType, false)], el);
    if (fn.returns.bag || fn.returns.dataType !== XS_BOOLEAN) {
      throw new XacmlSyntaxError(`The function given to ${mode} must return a boolean, ${fn.id} returns ${typeName(fn.returns)}`, el.path);
    }
    // any-of / all-of with a constant single value (a pattern, say): specialized for it, once.
    const impl = firstIsBag ? fn.impl : implementationFor(fn, [a, { constant: false, value: undefined }]);
    const where = `${el.path} (${name} with ${fn.id})`;
    const test = (x: unknown, y: unknown): boolean => {
      try {
        return impl([x, y]) as boolean;
      } catch (e) {
        throw toIndeterminate(e, where);
      }
    };
    const aEv = a.ev;
    const bEv = b.ev as (c: EvalContext) => readonly unknown[];
    let ev: (ctx: EvalContext) => boolean;
    switch (mode) {
      case 'any-of':
        ev = (ctx) => {
          const v = aEv(ctx);
          for (const y of bEv(ctx)) if (test(v, y)) return true;
          return false;
        };
        break;
      case 'all-of':
        ev = (ctx) => {
          const v = aEv(ctx);
          for (const y of bEv(ctx)) if (!test(v, y)) return false;
          return true;
        };
        break;
      case 'any-of-any':
        ev = (ctx) => {
          const xs = aEv(ctx) as readonly unknown[];
          const ys = bEv(ctx);
          for (const x of xs) for (const y of ys) if (test(x, y)) return true;
          return false;
        };
        break;
      case 'all-of-any':
        ev = (ctx) => {
          const xs = aEv(ctx) as readonly unknown[];
          const ys = bEv(ctx);
          outer: for (const x of xs) {
            for (const y of ys) if (test(x, y)) continue outer;
            return false;
          }
          return true;
        };
        break;
      case 'any-of-all':
        ev = (ctx) => {
          const xs = aEv(ctx) as readonly unknown[];
          const ys = bEv(ctx);
          outer: for (const x of xs) {
            for (const y of ys) if (!test(x, y)) continue outer;
            return true;
          }
          return false;
        };
        break;
      default:
        ev = (ctx) => {
          const xs = aEv(ctx) as readonly unknown[];
          const ys = bEv(ctx);
          for (const x of xs) for (const y of ys) if (!test(x, y)) return false;
          return true;
        };
    }
    return { type: BOOLEAN, ev, constant: false };
  };
}

const map: Compiler = (el, args, scope, compile) => {
  if (args.length !== 2) throw new XacmlSyntaxError(`map takes 2 arguments, got ${args.length}`, el.path);
  const fn = functionArgument(el, args, 'map');
  const bag = compile(args[1]!, scope);
  if (!bag.type.bag) throw new XacmlSyntaxError('Argument 2 of map must be a bag', el.path);
  checkArguments(fn, [valueType(bag.type.dataType, false)], el);
  if (fn.returns.bag) throw new XacmlSyntaxError(`The function given to map must return a single value, ${fn.id} returns a bag`, el.path);
  const impl = fn.impl;
  const where = `${el.path} (map with ${fn.id})`;
  const bagEv = bag.ev as (c: EvalContext) => readonly unknown[];
  const ev = (ctx: EvalContext): unknown[] => {
    const xs = bagEv(ctx);
    const out = new Array<unknown>(xs.length);
    try {
      for (let i = 0; i < xs.length; i++) out[i] = impl([xs[i]]);
    } catch (e) {
      throw toIndeterminate(e, where);
    }
    return out;
  };
  return { type: valueType(fn.returns.dataType, true), ev, constant: false };
};

function xpathFunction(name: 'xpath-node-count' | 'xpath-node-equal' | 'xpath-node-match'): Compiler {
  return (el, args, scope, compile) => {
    const arity = name === 'xpath-node-count' ? 1 : 2;
    if (args.length !== arity) throw new XacmlSyntaxError(`${name} takes ${arity} argument(s), got ${args.length}`, el.path);
    const exprs = compileArgs(args, scope, compile);
    exprs.forEach((e, i) => expectType(e, STRING, name, i, el));
    markDocumentUse(scope);
    const ns = xpathNamespaces(el);
    const where = `${el.path} (${FN1}${name})`;
    const [a, b] = exprs.map((e) => e.ev as (c: EvalContext) => string) as [(c: EvalContext) => string, (c: EvalContext) => string];
    let ev: (ctx: EvalContext) => unknown;
    if (name === 'xpath-node-count') {
      ev = (ctx) => {
        const x = a(ctx);
        try {
          return xpathNodeCount(ctx.document(), x, ns);
        } catch (e) {
          throw toIndeterminate(e, where);
        }
      };
    } else {
      const f = name === 'xpath-node-equal' ? xpathNodeEqual : xpathNodeMatch;
      ev = (ctx) => {
        const x = a(ctx);
        const y = b(ctx);
        try {
          return f(ctx.document(), x, y, ns);
        } catch (e) {
          throw toIndeterminate(e, where);
        }
      };
    }
    return { type: name === 'xpath-node-count' ? INTEGER : BOOLEAN, ev, constant: false };
  };
}

/** The non-eager functions by URI (they exist only in the 1.0 function namespace). */
export const nonEagerFunctions: ReadonlyMap<string, Compiler> = new Map<string, Compiler>([
  [`${FN1}and`, and],
  [`${FN1}or`, or],
  [`${FN1}n-of`, nOf],
  [`${FN1}not`, not],
  ...(['any-of', 'all-of', 'any-of-any', 'all-of-any', 'any-of-all', 'all-of-all'] as const).map(
    (m) => [`${FN1}${m}`, bagFunction(m)] as [string, Compiler],
  ),
  [`${FN1}map`, map],
  [`${FN1}xpath-node-count`, xpathFunction('xpath-node-count')],
  [`${FN1}xpath-node-equal`, xpathFunction('xpath-node-equal')],
  [`${FN1}xpath-node-match`, xpathFunction('xpath-node-match')],
]);

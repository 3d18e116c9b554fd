/**
 * A linear-time matcher for the syntax trees of `regex-syntax.ts`: a Thompson automaton run as a
 * lazily built DFA (each set of automaton states met becomes one DFA state, built on first use
 * and cached with its transitions, as RE2 does).
 *
 * Each input code point costs one table look-up once the DFA states it meets are cached, and at
 * most one pass over the automaton (its size, bounded at compile time) when they are not: there
 * is no backtracking, so the time is linear in the input whatever the pattern. The cache is
 * bounded: when an input fills it, it is dropped, and the rest of that input is matched by
 * following the automaton directly (one pass over it per code point, no state built).
 *
 * @module
 */
import { XsRegexError } from './regex-syntax.js';
import type { XsRegexNode } from './regex-syntax.js';

/** Most instructions a pattern may compile to (`a{1000}` takes 1,000; `[0-9]{1,1000}` 2,000). */
export const MAX_PROGRAM = 10_000;
/** Most cached DFA states of one pattern before its cache is dropped. */
const MAX_STATES = 2_000;
/** Most cached transitions, and automaton states held by cached DFA states, of one pattern. */
const MAX_CACHED = 64_000;
/** Most DFA transitions one input may build; past them the rest of it is matched without the DFA. */
const MAX_BUILT = 256;

// Instructions: a code point of class `arg`, a fork to the next and to `arg`, a jump to `arg`,
// the start and end anchors, and the match.
const CHAR = 0;
const FORK = 1;
const JUMP = 2;
const START = 3;
const END = 4;
const MATCH = 5;

/** One DFA state: the automaton states reached (after every free move) at some input position. */
interface State {
  /** Its `CHAR` instructions, ascending. */
  readonly chars: Int32Array;
  /** Whether the match instruction was reached: the pattern matches. */
  readonly match: boolean;
  /** Its `END` instructions (waiting for the end of the input), ascending. */
  readonly ends: Int32Array;
  /** Whether nothing can match any more from here (no character, no end, no match). */
  readonly dead: boolean;
  /** The cache generation it belongs to: transitions to states of older ones are not followed. */
  readonly generation: number;
  /** Transitions on ASCII code points, filled as met. */
  ascii: (State | undefined)[] | undefined;
  /** Transitions on the other code points, filled as met. */
  other: Map<number, State> | undefined;
  /** Whether the end of the input here makes a match (computed on first use). */
  acceptsAtEnd: boolean | undefined;
}

/** Whether a code point belongs to a class. */
type ClassTest = (cp: number) => boolean;

function classTest(node: Extract<XsRegexNode, { kind: 'class' }>): ClassTest {
  const lit = node.literal;
  if (lit !== undefined) return (cp) => cp === lit;
  let re: RegExp;
  try {
    re = new RegExp(`^${node.source}$`, 'v');
  } catch (e) {
    throw new XsRegexError(`invalid character class: ${(e as Error).message}`);
  }
  // ASCII membership is computed once; the rest is asked of the class (when a DFA transition is built).
  const ascii = new Uint8Array(128);
  for (let cp = 0; cp < 128; cp++) ascii[cp] = re.test(String.fromCharCode(cp)) ? 1 : 0;
  return (cp) => (cp < 128 ? ascii[cp] === 1 : re.test(String.fromCodePoint(cp)));
}

/** Instructions a node compiles to, or `Infinity` past the limit (checked before any is emitted). */
function size(node: XsRegexNode): number {
  switch (node.kind) {
    case 'class':
    case 'start':
    case 'end':
      return 1;
    case 'seq':
    case 'alt': {
      let n = node.kind === 'alt' ? 2 * node.items.length : 0;
      for (const item of node.items) n += size(item);
      return n > MAX_PROGRAM ? Infinity : n;
    }
    case 'repeat': {
      const body = size(node.item);
      const copies = node.max === Infinity ? Math.max(node.min, 1) : node.max;
      const n = copies * (body + 2) + 2;
      return n > MAX_PROGRAM ? Infinity : n;
    }
  }
}

/** The compiled automaton: parallel arrays of opcode and argument. */
class Program {
  readonly ops: number[] = [];
  readonly args: number[] = [];
  readonly tests: ClassTest[] = [];
  private readonly testIndex = new Map<XsRegexNode, number>();

  emit(op: number, arg = 0): number {
    this.ops.push(op);
    this.args.push(arg);
    return this.ops.length - 1;
  }

  compile(node: XsRegexNode): void {
    switch (node.kind) {
      case 'class': {
        let index = this.testIndex.get(node);
        if (index === undefined) {
          index = this.tests.push(classTest(node)) - 1;
          this.testIndex.set(node, index);
        }
        this.emit(CHAR, index);
        return;
      }
      case 'start':
        this.emit(START);
        return;
      case 'end':
        this.emit(END);
        return;
      case 'seq':
        for (const item of node.items) this.compile(item);
        return;
      case 'alt': {
        // fork → first | jump out; fork → second | …; last
        const jumps: number[] = [];
        for (let i = 0; i < node.items.length - 1; i++) {
          const fork = this.emit(FORK);
          this.compile(node.items[i]!);
          jumps.push(this.emit(JUMP));
          this.args[fork] = this.ops.length;
        }
        this.compile(node.items[node.items.length - 1]!);
        for (const j of jumps) this.args[j] = this.ops.length;
        return;
      }
      case 'repeat': {
        const { item, min, max } = node;
        for (let i = 0; i < min; i++) this.compile(item);
        if (max === Infinity) {
          // loop: fork → body | out; body; jump loop
          const loop = this.emit(FORK);
          this.compile(item);
          this.emit(JUMP, loop);
          this.args[loop] = this.ops.length;
        } else {
          // optional copies, each skipping to the end
          const forks: number[] = [];
          for (let i = min; i < max; i++) {
            forks.push(this.emit(FORK));
            this.compile(item);
          }
          for (const f of forks) this.args[f] = this.ops.length;
        }
        return;
      }
    }
  }
}

/** A compiled pattern with its DFA cache. */
export class LinearRegex {
  private readonly ops: Int32Array;
  private readonly args: Int32Array;
  private readonly tests: readonly ClassTest[];
  /** Work lists of the closure (sized once). */
  private readonly stack: Int32Array;
  private readonly seen: Int32Array;
  private mark = 0;
  private states = new Map<string, State>();
  private generation = 0;
  /** Transitions and automaton states held by this generation's cache. */
  private cached = 0;
  /** The state at the start of the input (the start anchor holds there only). */
  private initial: State | undefined;

  constructor(root: XsRegexNode) {
    if (size(root) > MAX_PROGRAM) throw new XsRegexError(`pattern too large: more than ${MAX_PROGRAM} instructions`);
    const program = new Program();
    program.compile(root);
    program.emit(MATCH);
    this.ops = Int32Array.from(program.ops);
    this.args = Int32Array.from(program.args);
    this.tests = program.tests;
    // Each instruction is visited once and pushes at most two more; the seeds are at most one per instruction.
    this.stack = new Int32Array(this.ops.length * 3 + 2);
    this.seen = new Int32Array(this.ops.length);
  }

  /** Whether the pattern matches some substring of `input` (anchors at its start and end). */
  test(input: string): boolean {
    let state = (this.initial ??= this.closure([0], true));
    const generation = this.generation;
    let built = 0;
    const n = input.length;
    for (let i = 0; i < n;) {
      if (state.match) return true;
      let cp = input.charCodeAt(i++);
      if (cp >= 0xd800 && cp <= 0xdbff && i < n) {
        const low = input.charCodeAt(i);
        if (low >= 0xdc00 && low <= 0xdfff) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          i++;
        }
      }
      let next = cp < 128 ? state.ascii?.[cp] : state.other?.get(cp);
      if (next === undefined || next.generation !== this.generation) {
        // This input meets more new DFA states than is worth building for it (or more than the
        // cache holds): building states that may not be reused costs more than following the
        // automaton directly, as RE2 also falls back.
        if (++built > MAX_BUILT || this.generation !== generation) return this.simulate(input, i - (cp > 0xffff ? 2 : 1), state.chars);
        next = this.step(state, cp);
      }
      state = next;
      if (state.dead) return false;
    }
    if (state.match) return true;
    if (state.acceptsAtEnd === undefined) state.acceptsAtEnd = this.acceptsAtEnd(state.ends, n === 0);
    return state.acceptsAtEnd;
  }

  /** Whether the end of the input, reached with the end anchors `ends` waiting, makes a match. */
  private acceptsAtEnd(ends: ArrayLike<number>, atStart: boolean): boolean {
    if (ends.length === 0) return false;
    const seeds = Array.from(ends, (pc) => pc + 1);
    return this.explore(seeds, atStart, true, [], []);
  }

  /**
   * The automaton followed directly (no DFA states) from `input[i]` on, with the `CHAR`
   * instructions `chars` alive there: the same answer, at a cost per code point of one pass
   * over the automaton.
   */
  private simulate(input: string, i: number, chars: ArrayLike<number>): boolean {
    const n = input.length;
    const { args, tests } = this;
    let alive: number[] = Array.from(chars);
    let ends: number[] = [];
    while (i < n) {
      let cp = input.charCodeAt(i++);
      if (cp >= 0xd800 && cp <= 0xdbff && i < n) {
        const low = input.charCodeAt(i);
        if (low >= 0xdc00 && low <= 0xdfff) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          i++;
        }
      }
      const seeds: number[] = [];
      for (const pc of alive) if (tests[args[pc]!]!(cp)) seeds.push(pc + 1);
      seeds.push(0);
      alive = [];
      ends = [];
      if (this.explore(seeds, false, false, alive, ends)) return true;
      if (alive.length === 0 && ends.length === 0) return false;
    }
    return this.acceptsAtEnd(ends, false);
  }

  /** Builds (or finds) the state after `cp` and caches the transition. */
  private step(from: State, cp: number): State {
    if (this.states.size >= MAX_STATES || this.cached >= MAX_CACHED) {
      // Full: start a new generation (its states are built again as met; the old ones are not
      // followed any more, so they are collected).
      this.states = new Map();
      this.generation++;
      this.cached = 0;
      this.initial = undefined;
    }
    const seeds: number[] = [];
    for (const pc of from.chars) if (this.tests[this.args[pc]!]!(cp)) seeds.push(pc + 1);
    seeds.push(0); // unanchored: a match may begin at every position
    const to = this.closure(seeds, false);
    if (cp < 128) (from.ascii ??= new Array<State | undefined>(128))[cp] = to;
    else (from.other ??= new Map()).set(cp, to);
    this.cached++;
    return to;
  }

  /**
   * Follows every move that reads no character from `seeds`, collecting the `CHAR` and waiting
   * `END` instructions reached; returns whether the match instruction was. The start anchor
   * passes only `atStart`, the end anchor only `atEnd` (else it waits in `ends`).
   */
  private explore(seeds: readonly number[], atStart: boolean, atEnd: boolean, chars: number[], ends: number[]): boolean {
    const { ops, args, stack, seen } = this;
    const mark = ++this.mark;
    let match = false;
    let top = 0;
    for (let i = seeds.length - 1; i >= 0; i--) stack[top++] = seeds[i]!;
    while (top > 0) {
      const pc = stack[--top]!;
      if (seen[pc] === mark) continue;
      seen[pc] = mark;
      switch (ops[pc]) {
        case CHAR:
          chars.push(pc);
          break;
        case FORK:
          stack[top++] = args[pc]!;
          stack[top++] = pc + 1;
          break;
        case JUMP:
          stack[top++] = args[pc]!;
          break;
        case START:
          if (atStart) stack[top++] = pc + 1;
          break;
        case END:
          if (atEnd) stack[top++] = pc + 1;
          else ends.push(pc);
          break;
        default:
          match = true;
      }
    }
    return match;
  }

  /** The DFA state of the instructions {@link explore} reaches from `seeds` (cached, except at the start). */
  private closure(seeds: readonly number[], atStart: boolean): State {
    const chars: number[] = [];
    const ends: number[] = [];
    const match = this.explore(seeds, atStart, false, chars, ends);
    // The state at the start of the input is used once per input: not cached.
    if (atStart) return this.make(chars, ends, match);
    chars.sort((a, b) => a - b);
    ends.sort((a, b) => a - b);
    const key = `${match ? 'm' : ''}${chars.join(',')}|${ends.join(',')}`;
    let state = this.states.get(key);
    if (state === undefined) {
      state = this.make(chars, ends, match);
      this.states.set(key, state);
      this.cached += chars.length + ends.length;
    }
    return state;
  }

  private make(chars: number[], ends: number[], match: boolean): State {
    return {
      chars: Int32Array.from(chars),
      ends: Int32Array.from(ends),
      match,
      // Nothing left to follow: every later position adds the start again, which gave nothing here.
      dead: !match && chars.length === 0 && ends.length === 0,
      generation: this.generation,
      ascii: undefined,
      other: undefined,
      acceptsAtEnd: undefined,
    };
  }
}

/**
 * Where an imported operation goes in an API's list. The gateway takes the first operation whose
 * template matches a request, so a new operation goes before the first one that would take its
 * requests, as OpenAPI prefers the concrete path (`/pet/findByStatus` before `/pet/{petId}`).
 *
 * Finding that one does not compare every pair of templates (a document of 6,000 operations made
 * 18 million comparisons, each compiling two regular expressions): each template is compiled once
 * and kept in an index by method and segment count, then in a tree of its segments, where a
 * literal segment is one lookup and only segments with parameters are tried one by one.
 *
 * A document can still be written so that thousands of templates with parameters overlap (every
 * one `/a{x}<n>`, or thousands of `/{p<n>}`): each new one is then tried against all the others.
 * The work of one ordering is bounded (characters compared, {@link MAX_ORDERING_WORK}): past it,
 * the import is refused with {@link OperationOrderError} rather than stall the gateway's event loop.
 *
 * @module
 */
import type { OperationConfig } from '../config/types.js';
import { compilePathTemplate, matchSegment, type CompiledTemplate, type TemplateSegment } from '../url/template.js';

/**
 * Most work of one ordering, in characters compared (plus one per comparison): some 30 ms of one
 * core. An API of thousands of operations with the usual shapes (literal segments, `{id}`) needs
 * a few per operation.
 */
export const MAX_ORDERING_WORK = 4_000_000;

/** The operations' templates overlap too much to be ordered within {@link MAX_ORDERING_WORK}. */
export class OperationOrderError extends Error {
  /** Stable code. */
  readonly code = 'ERR_OPERATIONS_OVERLAP';

  constructor() {
    super(
      `the operations' path templates overlap too much to be ordered (more than ${MAX_ORDERING_WORK} characters compared): import fewer operations at a time, or fewer templates that match each other`,
    );
    this.name = 'OperationOrderError';
  }
}

/**
 * An operation with its template compiled once, in a linked list (an insertion moves nothing)
 * whose labels grow along the list (which of two comes first is one comparison).
 */
interface Entry {
  readonly op: OperationConfig;
  readonly template: CompiledTemplate;
  label: number;
  previous: Entry | undefined;
  next: Entry | undefined;
}

/** A node of the segment tree: the entries whose templates end here, and the next segments. */
interface Node {
  readonly entries: Entry[];
  readonly literals: Map<string, Node>;
  /** Segments with parameters, by their literal texts (parameter names do not change what matches). */
  readonly templated: Map<string, { readonly segment: TemplateSegment; readonly node: Node }>;
}

function node(): Node {
  return { entries: [], literals: new Map(), templated: new Map() };
}

/** The operations of an API in order, and where a new one goes. */
export class OperationOrder {
  #head: Entry | undefined;
  #last: Entry | undefined;
  /** Trees by `<method> <segment count>`. */
  readonly #trees = new Map<string, Node>();
  #work = 0;

  /** Starts from `operations`, kept in their order. */
  constructor(operations: Iterable<OperationConfig> = []) {
    for (const op of operations) this.#insert(this.#entry(op), undefined);
  }

  /** The operations, in order. */
  get operations(): OperationConfig[] {
    const list: OperationConfig[] = [];
    for (let at = this.#head; at !== undefined; at = at.next) list.push(at.op);
    return list;
  }

  /**
   * Places `op` before the first operation that would take its requests (and not the other way
   * round), else last. Throws {@link OperationOrderError} past {@link MAX_ORDERING_WORK}.
   */
  place(op: OperationConfig): void {
    const entry = this.#entry(op);
    let first: Entry | undefined;
    for (const other of this.#matching(op.method, op.path)) {
      this.#spend(other.op.path.length);
      // Each takes the other's requests (the same route written twice): the list's order stands.
      if (entry.template.test(other.op.path)) continue;
      if (first === undefined || other.label < first.label) first = other;
    }
    this.#insert(entry, first);
  }

  /** Links `entry` before `before` (last when `undefined`), labels it, and indexes it. */
  #insert(entry: Entry, before: Entry | undefined): void {
    const previous = before === undefined ? this.#last : before.previous;
    entry.previous = previous;
    entry.next = before;
    if (previous === undefined) this.#head = entry;
    else previous.next = entry;
    if (before === undefined) this.#last = entry;
    else before.previous = entry;
    this.#label(entry);
    this.#index(entry);
  }

  /** A label between its neighbours'; when none is left between them, the whole list is labelled again. */
  #label(entry: Entry): void {
    const low = entry.previous?.label;
    const high = entry.next?.label;
    entry.label = low === undefined ? (high === undefined ? 0 : high - 1) : high === undefined ? low + 1 : low + (high - low) / 2;
    if (entry.label !== low && entry.label !== high) return;
    let label = 0;
    for (let at = this.#head; at !== undefined; at = at.next) at.label = label++;
  }

  #spend(characters: number): void {
    this.#work += characters + 1;
    if (this.#work > MAX_ORDERING_WORK) throw new OperationOrderError();
  }

  #entry(op: OperationConfig): Entry {
    // A path that is not a string (the document is the caller's) compiles to a template that matches nothing.
    return {
      op,
      template: compilePathTemplate(typeof op.path === 'string' ? op.path : ''),
      label: 0,
      previous: undefined,
      next: undefined,
    };
  }

  #index(entry: Entry): void {
    const { segments } = entry.template;
    if (segments.length === 0) return;
    const key = `${entry.op.method} ${segments.length}`;
    let at: Node = this.#trees.get(key) ?? node();
    this.#trees.set(key, at);
    for (const segment of segments) {
      if ('literal' in segment) {
        let next: Node | undefined = at.literals.get(segment.literal);
        if (next === undefined) at.literals.set(segment.literal, (next = node()));
        at = next;
        continue;
      }
      const shape = JSON.stringify(segment.literals.map((literal) => literal.text));
      let next = at.templated.get(shape);
      if (next === undefined) at.templated.set(shape, (next = { segment, node: node() }));
      at = next.node;
    }
    at.entries.push(entry);
  }

  /** The entries of `method` whose templates match the text `path` (as routing would match it). */
  #matching(method: string, path: unknown): Set<Entry> {
    const found = new Set<Entry>();
    if (typeof path !== 'string' || path.charCodeAt(0) !== 47 /* / */) return found;
    const segments = path.slice(1).split('/');
    this.#collect(this.#trees.get(`${method} ${segments.length}`), segments, found);
    // A template matches with one trailing `/` of the path ignored.
    if (segments.length > 1 && segments[segments.length - 1] === '') {
      this.#collect(this.#trees.get(`${method} ${segments.length - 1}`), segments.slice(0, -1), found);
    }
    return found;
  }

  /** Walks the tree along `segments` (a stack, not recursion: a template may have thousands of segments). */
  #collect(root: Node | undefined, segments: readonly string[], found: Set<Entry>): void {
    if (root === undefined) return;
    const stack: Array<[Node, number]> = [[root, 0]];
    while (stack.length > 0) {
      const [at, i] = stack.pop()!;
      if (i === segments.length) {
        for (const entry of at.entries) {
          this.#spend(0);
          found.add(entry);
        }
        continue;
      }
      const text = segments[i]!;
      const literal = at.literals.get(text);
      if (literal !== undefined) stack.push([literal, i + 1]);
      for (const { segment, node: next } of at.templated.values()) {
        this.#spend(text.length);
        if (matchSegment(segment, text, 0, text.length)) stack.push([next, i + 1]);
      }
    }
  }
}

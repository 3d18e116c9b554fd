/**
 * XACML policies checked as the gateway compiles them, with the offending element's path and its
 * line in the text, so that the editor can point at it.
 *
 * @module
 */
import { createPdp, type Pdp, type PdpOptions } from '../xacml/pdp.js';
import { XacmlSyntaxError } from '../xacml/errors.js';
// Paths are written as the evaluator writes them: its rules, not a copy.
import { ID_ATTRS, SINGLETONS } from '../xacml/xml.js';
import type { ConfigIssue } from '../config/errors.js';

/** A problem of a proposal: a field of the document, or a place in a policy. */
export interface ProposalIssue extends ConfigIssue {
  /** The policy file, for a policy problem. */
  readonly file?: string;
  /** The element's path in the policy (`/Policy[@PolicyId="p"]/Rule[@RuleId="ok"]/Condition`). */
  readonly element?: string;
  /** The line of the policy the problem is at, when known. */
  readonly line?: number;
}

const START_TAG = /<([A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)((?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/y;
const ATTR = /([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

/**
 * The line (from 1) of the element at `elementPath` in `xml`, following the evaluator's path
 * steps (`Rule[@RuleId="ok"]`, `Apply[2]`, `Condition`); the deepest element found on the way
 * when the path does not lead all the way; `undefined` when not even the root matches.
 */
export function lineOfElement(xml: string, elementPath: string): number | undefined {
  if (elementPath === '') return undefined;
  const lineAt = (index: number): number => {
    let line = 1;
    for (let k = xml.indexOf('\n'); k !== -1 && k < index; k = xml.indexOf('\n', k + 1)) line++;
    return line;
  };
  // Walk the start and end tags, keeping the path of each open element.
  const stack: Array<{ path: string; counts: Map<string, number> }> = [{ path: '', counts: new Map() }];
  let best: { length: number; index: number } | undefined;
  let i = 0;
  while (i < xml.length) {
    const lt = xml.indexOf('<', i);
    if (lt === -1) break;
    if (xml.startsWith('<!--', lt)) {
      const end = xml.indexOf('-->', lt + 4);
      i = end === -1 ? xml.length : end + 3;
      continue;
    }
    if (xml.startsWith('<![CDATA[', lt)) {
      const end = xml.indexOf(']]>', lt + 9);
      i = end === -1 ? xml.length : end + 3;
      continue;
    }
    if (xml.startsWith('<?', lt) || xml.startsWith('<!', lt)) {
      const end = xml.indexOf('>', lt + 2);
      i = end === -1 ? xml.length : end + 1;
      continue;
    }
    if (xml[lt + 1] === '/') {
      if (stack.length > 1) stack.pop();
      const end = xml.indexOf('>', lt + 2);
      i = end === -1 ? xml.length : end + 1;
      continue;
    }
    START_TAG.lastIndex = lt;
    const m = START_TAG.exec(xml);
    if (m === null) {
      i = lt + 1;
      continue;
    }
    const local = m[2]!;
    const parent = stack[stack.length - 1]!;
    const n = (parent.counts.get(local) ?? 0) + 1;
    parent.counts.set(local, n);
    const attrs = new Map<string, string>();
    for (const a of m[3]!.matchAll(ATTR)) attrs.set(a[1]!, a[2] ?? a[3] ?? '');
    const idAttr = ID_ATTRS[local];
    let step = local;
    if (idAttr !== undefined && attrs.has(idAttr)) step += `[@${idAttr}=${JSON.stringify(attrs.get(idAttr))}]`;
    else if (!SINGLETONS.has(local)) step += `[${n}]`;
    const path = `${parent.path}/${step}`;
    if (elementPath === path || elementPath.startsWith(`${path}/`)) {
      if (best === undefined || path.length > best.length) best = { length: path.length, index: lt };
    }
    if (m[4] !== '/') stack.push({ path, counts: new Map() });
    i = START_TAG.lastIndex;
  }
  return best === undefined ? undefined : lineAt(best.index);
}

/** A policy compiled as the gateway compiles it, or the issue that stops it (see {@link policyIssues}). */
export type CompiledPolicy =
  { readonly pdp: Pdp; readonly issues?: undefined } | { readonly pdp?: undefined; readonly issues: ProposalIssue[] };

/**
 * Compiles a policy and its references as the gateway does (once: the caller evaluates the
 * result), or answers the one issue at `at` with the evaluator's message, the element's path and
 * its line. `pdp` options other than the texts (a clock) are passed on.
 */
export function compilePolicy(
  policy: string,
  references: string[],
  file: string,
  at: string,
  options: Omit<PdpOptions, 'policies' | 'references'> = {},
): CompiledPolicy {
  try {
    return { pdp: createPdp({ ...options, policies: [policy], references }) };
  } catch (err) {
    if (!(err instanceof XacmlSyntaxError)) return { issues: [{ path: at, file, message: (err as Error)?.message ?? String(err) }] };
    const malformed = /\(line (\d+), column \d+\)$/.exec(err.message);
    const line = malformed !== null ? Number(malformed[1]) : lineOfElement(policy, err.path);
    return {
      issues: [
        {
          path: at,
          file,
          message: err.message,
          ...(err.path === '' ? {} : { element: err.path }),
          ...(line === undefined ? {} : { line }),
        },
      ],
    };
  }
}

/**
 * The problems of a policy and its references, compiled as the gateway does: none, or one issue
 * at `at` with the evaluator's message, the element's path and its line.
 */
export function policyIssues(policy: string, references: string[], file: string, at: string): ProposalIssue[] {
  return compilePolicy(policy, references, file, at).issues ?? [];
}

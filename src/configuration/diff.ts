/**
 * Line differences between two versions of the configuration document and its policies.
 *
 * @module
 */
import { withoutSecrets } from './masking.js';
import type { ConfigSnapshot } from './store.js';

/** One line of a difference: kept (` `), removed (`-`) or added (`+`). */
export interface DiffLine {
  /** What happened to the line. */
  op: ' ' | '-' | '+';
  /** The line's text. */
  text: string;
  /** Its line number in the older text (kept and removed lines). */
  oldLine?: number;
  /** Its line number in the newer text (kept and added lines). */
  newLine?: number;
}

/** Above this many cells the middle of two texts is shown as replaced whole instead of compared. */
const MAX_CELLS = 4_000_000;

/**
 * The line difference of two texts (longest common subsequence after the common head and tail),
 * with at most `context` kept lines around each change (the rest omitted).
 */
export function diffLines(before: string, after: string, context = 3): DiffLine[] {
  const a = before === '' ? [] : before.split('\n');
  const b = after === '' ? [] : after.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const middle: Array<{ op: DiffLine['op']; text: string }> = [];
  const n = midA.length;
  const m = midB.length;
  if (n * m > MAX_CELLS) {
    for (const text of midA) middle.push({ op: '-', text });
    for (const text of midB) middle.push({ op: '+', text });
  } else {
    // lcs[i][j]: length of the LCS of midA[i..] and midB[j..], one row of m+1 per i.
    const lcs = new Uint32Array((n + 1) * (m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * (m + 1) + j] =
          midA[i] === midB[j] ? lcs[(i + 1) * (m + 1) + j + 1]! + 1 : Math.max(lcs[(i + 1) * (m + 1) + j]!, lcs[i * (m + 1) + j + 1]!);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) {
        middle.push({ op: ' ', text: midA[i]! });
        i++;
        j++;
      } else if (i < n && (j === m || lcs[(i + 1) * (m + 1) + j]! >= lcs[i * (m + 1) + j + 1]!)) {
        // Removals before additions, as diff(1) shows them.
        middle.push({ op: '-', text: midA[i++]! });
      } else {
        middle.push({ op: '+', text: midB[j++]! });
      }
    }
  }
  const all: DiffLine[] = [];
  let oldLine = 1;
  let newLine = 1;
  const push = (op: DiffLine['op'], text: string): void => {
    if (op === ' ') all.push({ op, text, oldLine: oldLine++, newLine: newLine++ });
    else if (op === '-') all.push({ op, text, oldLine: oldLine++ });
    else all.push({ op, text, newLine: newLine++ });
  };
  for (let k = 0; k < head; k++) push(' ', a[k]!);
  for (const line of middle) push(line.op, line.text);
  for (let k = a.length - tail; k < a.length; k++) push(' ', a[k]!);
  // Keep only the context around changes.
  const keep = new Array<boolean>(all.length).fill(false);
  all.forEach((line, index) => {
    if (line.op === ' ') return;
    for (let k = Math.max(0, index - context); k <= Math.min(all.length - 1, index + context); k++) keep[k] = true;
  });
  return all.filter((_, index) => keep[index]);
}

/** The diff of two snapshots, secrets masked: the document and each policy file. */
export function snapshotDiff(a: ConfigSnapshot, b: ConfigSnapshot, label: string): Array<{ file: string; lines: DiffLine[] }> {
  const doc = (s: ConfigSnapshot): string => `${JSON.stringify(withoutSecrets(s.document).document, null, 2)}\n`;
  const secretsLine = (s: ConfigSnapshot): string => `${JSON.stringify(withoutSecrets(s.document).secrets, null, 2)}\n`;
  const files: Array<{ file: string; lines: DiffLine[] }> = [];
  const docLines = diffLines(doc(a), doc(b));
  if (docLines.length > 0) files.push({ file: label, lines: docLines });
  const secretLines = diffLines(secretsLine(a), secretsLine(b));
  if (secretLines.length > 0) files.push({ file: '(client secrets: whether set and where from)', lines: secretLines });
  const names = new Set([...Object.keys(a.policies), ...Object.keys(b.policies)]);
  for (const name of [...names].sort()) {
    const lines = diffLines(a.policies[name] ?? '', b.policies[name] ?? '');
    if (lines.length > 0) files.push({ file: name, lines });
  }
  return files;
}

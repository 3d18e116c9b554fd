/**
 * The largest items of a V8 CPU profile (`node --cpu-prof`, or `BENCH_CPU_PROF=<dir>` in the
 * gateway bench): self time by area (the gateway's folders, undici, socket writes, the garbage
 * collector, Node's modules; start-up left out), by function and by file, as a share of the
 * samples taken while the process was not idle.
 *
 * Usage: npx tsx bench/profile-summary.ts <file.cpuprofile> [top N, default 25]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

const [file, topArg] = process.argv.slice(2);
if (file === undefined) {
  console.error('usage: profile-summary.ts <file.cpuprofile> [top N]');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
const hits = new Map<number, number>();
for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);

/** Where a sample's time goes, for the by-area table. */
function areaOf(functionName: string, url: string): string {
  if (/register-|lexer-|internal\/modules\/|\/tsx\//.test(url) || /^(compileSourceTextModule|wrapSafe)$/.test(functionName))
    return 'start-up';
  if (url.includes('/dist/') || url.includes('/src/'))
    return `gateway: ${url
      .replace(/^.*\/(dist|src)\//, '')
      .split('/')[0]!
      .replace(/\.[jt]s$/, '')}`;
  if (url.includes('/node_modules/')) return url.replace(/^.*\/node_modules\//, '').split('/')[0]!;
  if (/^(writev|writeLatin1String|writeUtf8String|writeBuffer)$/.test(functionName)) return 'socket writes';
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (url.startsWith('node:'))
    return `node:${
      url
        .slice(5)
        .replace(/^internal\//, '')
        .split('/')[0]!
    }`;
  return url === '' ? functionName : url;
}

const byArea = new Map<string, number>();
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
let busy = 0;
for (const node of profile.nodes) {
  const count = hits.get(node.id) ?? 0;
  const { functionName, url, lineNumber } = node.callFrame;
  if (count === 0 || functionName === '(idle)' || functionName === '(program)') continue;
  busy += count;
  const area = areaOf(functionName, url);
  byArea.set(area, (byArea.get(area) ?? 0) + count);
  const where = url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, '')
    .replace(process.cwd() + '/', '');
  const name = `${functionName || '(anonymous)'} ${where === '' ? '' : `${where}:${lineNumber + 1}`}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + count);
  const fileKey = where === '' ? functionName : where;
  byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + count);
}

function print(title: string, table: Map<string, number>, total = busy): void {
  console.log(`\n${title} (share of ${total} busy samples)`);
  for (const [name, count] of [...table].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`  ${((100 * count) / total).toFixed(1).padStart(5)}%  ${name}`);
  }
}
const startUp = byArea.get('start-up') ?? 0;
byArea.delete('start-up');
print(`Self time by area, start-up (${startUp} samples) left out`, byArea, busy - startUp);
print('Self time by function', byFunction);
print('Self time by file', byFile);

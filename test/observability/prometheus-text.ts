/**
 * A reader of the Prometheus text exposition format (version 0.0.4), as a scraper reads it: one
 * sample per line, `name{label="value",...} value`, escapes undone. Strict: a line it cannot read
 * fails the test.
 */

/** One sample. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a scrape, and the `# TYPE` of each family. */
export interface Scrape {
  samples: Sample[];
  types: Map<string, string>;
  /** The value of the sample with exactly these labels (after `labels`' keys only), or `undefined`. */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** Sum of the samples of `name` whose labels include `labels`. */
  sum(name: string, labels?: Record<string, string>): number;
  /** The samples of `name` whose labels include `labels`. */
  select(name: string, labels?: Record<string, string>): Sample[];
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/y;

function unescape(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

function parseValue(text: string): number {
  // As Prometheus reads them (Go's ParseFloat): the special values in any case (prom-client writes `Nan`).
  const lower = text.toLowerCase();
  if (lower === '+inf' || lower === 'inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (lower === 'nan') return NaN;
  const value = Number(text);
  if (Number.isNaN(value)) throw new Error(`not a sample value: ${text}`);
  return value;
}

export function parsePrometheusText(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type !== null) types.set(type[1]!, type[2]!);
      continue;
    }
    const match = LINE.exec(line);
    if (match === null) throw new Error(`unreadable line: ${line}`);
    const labels: Record<string, string> = {};
    const body = match[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const label = LABEL.exec(body);
      if (label === null) throw new Error(`unreadable labels: ${line}`);
      labels[label[1]!] = unescape(label[2]!);
    }
    samples.push({ name: match[1]!, labels, value: parseValue(match[3]!) });
  }
  const includes = (sample: Sample, labels: Record<string, string>): boolean =>
    Object.entries(labels).every(([k, v]) => sample.labels[k] === v);
  const select = (name: string, labels: Record<string, string> = {}): Sample[] =>
    samples.filter((s) => s.name === name && includes(s, labels));
  return {
    samples,
    types,
    select,
    value(name, labels = {}) {
      const found = samples.filter(
        (s) => s.name === name && Object.keys(s.labels).length === Object.keys(labels).length && includes(s, labels),
      );
      if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
      return found[0]?.value;
    },
    sum: (name, labels = {}) => select(name, labels).reduce((total, s) => total + s.value, 0),
  };
}

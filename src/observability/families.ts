/**
 * Counters and histograms whose request-path cost is a property increment, exposed through a
 * prom-client `Registry`.
 *
 * prom-client's own `Counter.inc` and `Histogram.observe` hash and validate the labels on every
 * call, child or not (about 0.45 µs each, measured): five of them per exchange would cost the
 * gateway several percent of its throughput. Here a series is a plain object bound once (at
 * compile time where the labels are known then, else found by one `Map` lookup), the request path
 * adds to its fields, and the registry reads them when it is scraped: a family is registered as a
 * metric whose `get()` gives the values in prom-client's own shape (what `registry.metrics()` and
 * `getMetricsAsJSON()` read), so exposition, escaping and content types stay prom-client's.
 *
 * @module
 */
import type { Registry } from 'prom-client';

/** Labels of one series, by name. */
export type LabelValues = Readonly<Record<string, string>>;

/** One counter series: add to `value`. */
export interface CounterSeries {
  readonly labels: LabelValues;
  value: number;
}

/** One histogram series. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative), the last one above the largest bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: LabelValues,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** Records one observation (seconds). */
  observe(value: number): void {
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/** A value of prom-client's `MetricObjectWithValues` shape. */
interface ExportedValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** What `Registry` reads of a metric. */
interface RegisteredMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram' | 'gauge';
  aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; values: ExportedValue[]; aggregator: 'sum' }>;
  reset(): void;
}

abstract class Family<S extends { readonly labels: LabelValues }> implements RegisteredMetric {
  abstract readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum' as const;
  protected readonly series = new Map<string, S>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    // The registry's contract is duck-typed (name, help, type, get, reset); its typings list its own classes.
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  protected abstract create(labels: LabelValues): S;

  /**
   * The series of these label values (in `labelNames` order), created at first use. Call it once
   * where the labels are fixed and keep the series; on the request path, prefer {@link Family.byKey}.
   */
  child(...values: string[]): S {
    return this.byKey(values.join('\u0000'), values);
  }

  /** The series under `key` (one string per combination of label values), created from `values` at first use. */
  byKey(key: string, values: readonly string[]): S {
    return this.series.get(key) ?? this.add(key, values);
  }

  /** The series under `key`, if it exists (the request path: no array of values built on a hit). */
  find(key: string): S | undefined {
    return this.series.get(key);
  }

  /** Creates the series under `key` with these label values (in `labelNames` order). */
  add(key: string, values: readonly string[]): S {
    const labels: Record<string, string> = {};
    this.labelNames.forEach((name, i) => (labels[name] = values[i] ?? ''));
    const created = this.create(Object.freeze(labels));
    this.series.set(key, created);
    return created;
  }

  protected abstract values(): ExportedValue[];

  get(): Promise<{ name: string; help: string; type: string; values: ExportedValue[]; aggregator: 'sum' }> {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values: this.values(), aggregator: this.aggregator });
  }

  /** Forgets every series (prom-client's `registry.resetMetrics()`); series bound before keep counting unseen. */
  reset(): void {
    this.series.clear();
  }
}

/** A counter family. */
export class CounterFamily extends Family<CounterSeries> {
  readonly type = 'counter' as const;

  protected create(labels: LabelValues): CounterSeries {
    return { labels, value: 0 };
  }

  protected values(): ExportedValue[] {
    return [...this.series.values()].map((s) => ({ labels: { ...s.labels }, value: s.value }));
  }
}

/** A histogram family (bounds in seconds, increasing). */
export class HistogramFamily extends Family<HistogramSeries> {
  readonly type = 'histogram' as const;

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    registry: Registry,
    readonly bounds: readonly number[],
  ) {
    super(name, help, labelNames, registry);
  }

  protected create(labels: LabelValues): HistogramSeries {
    return new HistogramSeries(labels, this.bounds);
  }

  protected values(): ExportedValue[] {
    const out: ExportedValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += s.counts[i]!;
        out.push({ labels: { ...s.labels, le }, value: cumulative, metricName: bucket });
      });
      out.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: bucket });
      out.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` });
      out.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` });
    }
    return out;
  }
}

/** A family whose values are read from elsewhere when the registry is scraped (counts kept by the stores, cache sizes). */
export class CollectedFamily implements RegisteredMetric {
  readonly aggregator = 'sum' as const;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge',
    private readonly read: () => ReadonlyArray<{ labels: Record<string, string>; value: number }>,
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  get(): Promise<{ name: string; help: string; type: string; values: ExportedValue[]; aggregator: 'sum' }> {
    const values = this.read().map(({ labels, value }) => ({ labels: { ...labels }, value }));
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  reset(): void {
    // Nothing kept here: the values are read at each scrape.
  }
}

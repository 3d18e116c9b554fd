/** The part of autocannon's API the benchmarks use (the package ships no type declarations). */
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      headers?: Record<string, string>;
      connections?: number;
      pipelining?: number;
      duration?: number;
      method?: string;
      body?: string;
      /** A sequence of requests; `setupRequest` rebuilds one before each send (per-request headers). */
      requests?: Array<{ setupRequest?: (request: { headers?: Record<string, string> }) => { headers?: Record<string, string> } }>;
    }
    interface Histogram {
      average: number;
      p50: number;
      p99: number;
      /** Count of samples (for `requests`: the number of requests completed). */
      total: number;
    }
    interface Result {
      requests: Histogram;
      latency: Histogram;
      non2xx: number;
      errors: number;
    }
  }
  function autocannon(options: autocannon.Options): Promise<autocannon.Result>;
  export default autocannon;
}

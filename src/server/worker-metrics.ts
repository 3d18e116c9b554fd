/**
 * The metrics of `serve --workers <n>`: each worker counts its own exchanges, and a scrape (which
 * reaches one worker, the one the connection landed on) answers the sum over all of them, asked
 * of the primary, which collects every worker's registry (prom-client's cluster aggregation).
 *
 * @module
 */
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

const ASK = 'express-access-gateway:metrics';
const ANSWER = 'express-access-gateway:metrics-answer';
/** Longest wait for the primary's sum (prom-client gives up on a worker after 5 s). */
const ANSWER_TIMEOUT_MS = 6000;

interface Ask {
  type: typeof ASK;
  id: number;
}
interface Answer {
  type: typeof ANSWER;
  id: number;
  text?: string;
  error?: string;
}

/** In the primary: answers a worker's request with the metrics of every worker, summed. */
export function answerWorkerMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: Ask | undefined) => {
    if (message?.type !== ASK) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: ANSWER, id: message.id, text } satisfies Answer),
      (error: unknown) =>
        worker.send({ type: ANSWER, id: message.id, error: error instanceof Error ? error.message : String(error) } satisfies Answer),
    );
  });
}

/** In a worker: offers `registry` to the primary's sum, and gives the text of that sum. */
export function workerMetricsText(registry: Registry): () => Promise<string> {
  // Registers the worker's side of the aggregation (answering the primary's collection).
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  const pending = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void; timer: NodeJS.Timeout }>();
  let next = 0;
  process.on('message', (message: Answer | undefined) => {
    if (message?.type !== ANSWER) return;
    const waiting = pending.get(message.id);
    if (waiting === undefined) return;
    pending.delete(message.id);
    clearTimeout(waiting.timer);
    if (typeof message.text === 'string') waiting.resolve(message.text);
    else waiting.reject(new Error(`the workers' metrics could not be collected: ${message.error ?? 'no answer'}`));
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error("the workers' metrics were not collected in time"));
      }, ANSWER_TIMEOUT_MS);
      pending.set(id, { resolve, reject, timer });
      process.send?.({ type: ASK, id } satisfies Ask);
    });
}

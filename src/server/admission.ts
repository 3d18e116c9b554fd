/**
 * The admin listener's share of the event loop. The admin routes and the APIs are served by one
 * process: a flood of the admin port (anonymous POSTs, guessed passwords) would otherwise take the
 * CPU the API callers need, however cheaply each request is refused. Requests of the admin
 * listener are admitted at a bounded rate (a token bucket); one that arrives past it waits with
 * its connection paused, so that nothing more is read from that client until its turn, and the
 * flood costs the gateway at most the admitted rate. Health checks are admitted at once: a load
 * balancer must not see an instance down because someone floods its admin port.
 *
 * @module
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { OptionChecks } from '../options.js';
import { optionKeys } from '../options.js';

/** The admin listener's admission rate (see {@link ServeOptions.adminAdmission}). */
export interface AdminAdmissionOptions {
  /** Requests admitted per second, on average. Default `500`. */
  ratePerSecond?: number;
  /** Requests admitted at once after a quiet moment. Default `100`. */
  burst?: number;
  /** Requests waiting for their turn; past it a new one has its connection closed unanswered. Default `4096`. */
  maxWaiting?: number;
}

const ADMISSION_KEYS = optionKeys<AdminAdmissionOptions>({ ratePerSecond: true, burst: true, maxWaiting: true });

/** {@link AdminAdmissionOptions} checked, with their defaults. @internal */
export function adminAdmissionSettings(check: OptionChecks, value: unknown): Required<AdminAdmissionOptions> {
  const o = check.known(check.object<AdminAdmissionOptions>(value, 'adminAdmission', {}), 'adminAdmission', ADMISSION_KEYS);
  return {
    ratePerSecond: check.positive(o.ratePerSecond, 'adminAdmission.ratePerSecond', 500, true),
    burst: check.positive(o.burst, 'adminAdmission.burst', 100, true),
    maxWaiting: check.positive(o.maxWaiting, 'adminAdmission.maxWaiting', 4096, true),
  };
}

/** Paths answered at once whatever the rate: the health checks of load balancers and orchestrators. */
const HEALTH = /\/health\/(?:live|ready)(?:\?|$)/;

/** `handler` behind the admission rate. @internal */
export function admitted(handler: RequestListener, settings: Required<AdminAdmissionOptions>): RequestListener {
  const perMs = settings.ratePerSecond / 1000;
  let tokens = settings.burst;
  let refilledAt = performance.now();
  const waiting: Array<[IncomingMessage, ServerResponse]> = [];
  let timer: NodeJS.Timeout | undefined;

  const refill = (): void => {
    const now = performance.now();
    tokens = Math.min(settings.burst, tokens + (now - refilledAt) * perMs);
    refilledAt = now;
  };
  const run = (req: IncomingMessage, res: ServerResponse): void => {
    tokens -= 1;
    handler(req, res);
  };
  const drain = (): void => {
    timer = undefined;
    refill();
    while (tokens >= 1 && waiting.length > 0) {
      const [req, res] = waiting.shift()!;
      // A client that left while it waited costs nothing more.
      if (req.destroyed || req.socket.destroyed) continue;
      req.socket.resume();
      run(req, res);
    }
    if (waiting.length > 0) timer = setTimeout(drain, Math.max(1, Math.ceil((1 - tokens) / perMs)));
  };

  return (req, res) => {
    if (req.method === 'GET' && HEALTH.test(req.url ?? '')) return void handler(req, res);
    refill();
    if (tokens >= 1 && waiting.length === 0) return run(req, res);
    if (waiting.length >= settings.maxWaiting) return void req.socket.destroy();
    req.socket.pause();
    waiting.push([req, res]);
    timer ??= setTimeout(drain, Math.max(1, Math.ceil((1 - tokens) / perMs)));
  };
}

/**
 * The instance's cap on requests in flight (`maxConcurrentRequests`): a counter, checked before any
 * other work; past the cap a request is refused at once, never queued.
 *
 * A slot is given back exactly once, whatever ends the exchange (see `onExchangeEnd`: its answer
 * sent, its client gone, its connection closed with the answer still queued behind another). While
 * the gateway waits on the client (a form body read for `access_token`), the exchange holds no
 * slot: it gives its slot back and takes one again once the body has arrived (refused with 429
 * when the cap is reached by then), so that clients sending slowly cannot hold the cap.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gatewayContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { onExchangeEnd, setClientWait } from '../exchange/answer-end.js';

/** A place under the cap, taken by {@link InstanceCap.take}. */
export interface InstanceSlot {
  /** Gives the place back for good: once the exchange ends (idempotent). */
  readonly release: () => void;
  /** Gives the place back while the exchange waits on its client: not in flight meanwhile. */
  readonly suspend: () => void;
  /** Takes a place again after {@link InstanceSlot.suspend}: `false` when the cap is reached now. */
  readonly resume: () => boolean;
}

/** The requests in flight on this instance, up to a cap. */
export class InstanceCap {
  /** The cap. */
  readonly max: number;
  #inFlight = 0;
  #waiting = 0;

  constructor(max: number) {
    this.max = max;
  }

  /** Requests in flight now (the `gateway_concurrent_requests` gauge). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Exchanges admitted and not ended: in flight, or waiting on their clients without a slot. */
  get admitted(): number {
    return this.#inFlight + this.#waiting;
  }

  /**
   * Takes a place: the function that gives it back (idempotent; call it once the exchange ends),
   * or `undefined` when the cap is reached.
   */
  admit(): (() => void) | undefined {
    return this.take()?.release;
  }

  /** Takes a place: the slot, or `undefined` when the cap is reached. */
  take(): InstanceSlot | undefined {
    if (this.#inFlight >= this.max) return undefined;
    this.#inFlight++;
    let state: 'held' | 'waiting' | 'released' = 'held';
    return {
      release: () => {
        if (state === 'held') this.#inFlight--;
        else if (state === 'waiting') this.#waiting--;
        state = 'released';
      },
      suspend: () => {
        if (state !== 'held') return;
        state = 'waiting';
        this.#inFlight--;
        this.#waiting++;
      },
      resume: () => {
        if (state === 'held') return true;
        if (state === 'released' || this.#inFlight >= this.max) return false;
        state = 'held';
        this.#waiting--;
        this.#inFlight++;
        return true;
      },
    };
  }
}

/** The refusal of a request over the cap (at its arrival, or once its form body has arrived). */
export function instanceBusy(cap: InstanceCap, when: 'arrival' | 'body'): GatewayError {
  const where = `${cap.max} requests in flight on this instance (trafficControl.maxConcurrentRequests)`;
  return new GatewayError('ERR_INSTANCE_BUSY', {
    diagnostic: when === 'arrival' ? `refused before any work: ${where}` : `refused once its form body was read: ${where}`,
  });
}

/**
 * Admits an exchange under the cap: `undefined` (its slot given back once the exchange ends,
 * whatever ends it, and while the gateway waits on its client), or the refusal to answer at once.
 */
export function admitExchange(cap: InstanceCap, res: ServerResponse): GatewayError | undefined {
  const slot = cap.take();
  if (slot === undefined) return instanceBusy(cap, 'arrival');
  onExchangeEnd(res, slot.release);
  const req = (res as ServerResponse & { req?: IncomingMessage }).req;
  if (req !== undefined) {
    setClientWait(gatewayContext(req), {
      suspend: slot.suspend,
      resume: () => (slot.resume() ? undefined : instanceBusy(cap, 'body')),
    });
  }
  return undefined;
}

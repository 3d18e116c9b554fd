/**
 * Whose forwarded headers the gateway believes, when the configuration file may say it too: the
 * `createGateway` option's `trustProxy`, or the file's top-level `trustProxy` (one of the two),
 * switched when a configuration is put in force.
 *
 * @module
 */
import { ConfigError } from '../config/errors.js';
import type { ResolvedListener } from '../config/types.js';
import { optionChecks } from '../options.js';
import { compileTrust, type TrustFunction, type TrustProxy } from '../trust-proxy.js';

/** The trust in force, behind one function that every listener part holds. */
export class ListenerTrust {
  #current: TrustFunction;
  readonly #option: TrustFunction;
  readonly #optionGiven: boolean;

  /** `option`: `createGateway`'s `trustProxy`, compiled; `given`: whether the option was given. */
  constructor(option: TrustFunction, given: boolean) {
    this.#option = option;
    this.#current = option;
    this.#optionGiven = given;
  }

  /** Whether the peer at `hop` is trusted, by the trust in force now. */
  readonly trust: TrustFunction = (address, hop) => this.#current(address, hop);

  /**
   * The trust a configuration asks for: its file's `trustProxy`, else the option's.
   *
   * @throws ConfigError when both give one, or the file's does not compile.
   */
  forConfig(listener: ResolvedListener): TrustFunction {
    if (listener.trustProxy === undefined) return this.#option;
    if (this.#optionGiven)
      throw new ConfigError([
        { path: 'trustProxy', message: "is also given by createGateway's trustProxy option (serve's --trust-proxy): give it in one place" },
      ]);
    try {
      return compileTrust(listener.trustProxy as TrustProxy, optionChecks('configuration'), 'trustProxy');
    } catch (err) {
      throw new ConfigError([{ path: 'trustProxy', message: (err as Error).message }], undefined, { cause: err });
    }
  }

  /** Puts a configuration's trust in force. */
  use(trust: TrustFunction): void {
    this.#current = trust;
  }
}

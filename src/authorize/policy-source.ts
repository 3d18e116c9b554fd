/**
 * The compiled XACML policy of an authorization point, with its reload rules.
 *
 * @module
 */
import { logger } from '../log.js';
import { optionChecks, optionKeys, type OptionChecks } from '../options.js';
import { createPdp, type Pdp, type PdpOptions } from '../xacml/index.js';

const log = logger('authorize');

/** The evaluator options a policy source passes to `createPdp` (attribute finder, clock, resource children). */
export type XacmlEvaluatorOptions = Omit<PdpOptions, 'policies' | 'references'>;

/**
 * Policy documents: one XML text, several top-level ones, or top-level ones plus documents
 * reachable only through `PolicyIdReference`/`PolicySetIdReference`.
 */
export type XacmlPolicyDocuments =
  | string
  | readonly string[]
  | {
      /** XML of the top-level Policy/PolicySet documents (at least one). */
      policies: readonly string[];
      /** XML of documents reachable only through `PolicyIdReference`/`PolicySetIdReference`. */
      references?: readonly string[];
    };

/** Loads the current policy documents, for example by reading a file or a configuration store. */
export type XacmlPolicyLoader = () => XacmlPolicyDocuments | Promise<XacmlPolicyDocuments>;

/** Options of {@link XacmlPolicySource}. */
export interface XacmlPolicySourceOptions extends XacmlEvaluatorOptions {
  /**
   * The policy: XML text (or texts), compiled at construction so that a bad policy throws at
   * start-up, or a loader, called at first use and again after {@link XacmlPolicySource.reset}
   * or {@link XacmlPolicySource.reload}.
   */
  policy: XacmlPolicyDocuments | XacmlPolicyLoader;
  /** Referenced documents added to those the policy gives. */
  references?: readonly string[];
}

/** What {@link XacmlPolicySource.get} gives: the policy in force and, when a reload just failed, why. */
export interface XacmlPolicyState {
  /** The compiled policy in force. */
  readonly pdp: Pdp;
  /** Increases each time a different policy text is compiled and put in force (first one: 1). */
  readonly version: number;
  /** The error of the reload that just failed while this (previous) policy stayed in force. */
  readonly reloadError?: Error;
}

const POLICY_SOURCE_KEYS = optionKeys<XacmlPolicySourceOptions>({
  policy: true,
  references: true,
  attributeFinder: true,
  resourceChildren: true,
  now: true,
  limits: true,
  maxXPathAttributes: true,
});

/**
 * Owns the compiled policy of one authorization point: compiles each policy version once, keeps it
 * until reset, and never replaces a working policy with a broken one.
 *
 * - A policy given as text is compiled by the constructor: an invalid one throws (`XacmlSyntaxError`).
 * - A loader is called at first use, and again after {@link reset} (lazily, by the next request) or
 *   {@link reload} (now). A loaded text equal to the one in force is not compiled again.
 * - If a new text fails to load or compile, the previous policy stays in force and the error is
 *   logged and reported to the request that triggered the reload (as a diagnostic). With no
 *   previous policy, {@link get} rejects and the middleware fails closed (500).
 *
 * Create one per policy and pass it to `xacmlAuthorize({ xacmlPolicy: source })`, or let
 * `xacmlAuthorize` create it and use the middleware's `reset()`/`reload()`.
 *
 * @example
 * ```ts
 * import { readFile } from 'node:fs/promises';
 * import { XacmlPolicySource } from 'express-access-gateway';
 *
 * const source = new XacmlPolicySource({ policy: () => readFile('policies/petstore.xml', 'utf8') });
 * // after the file changed (as ResetAllCaches does):
 * source.reset();
 * ```
 */
export class XacmlPolicySource {
  readonly #loader: XacmlPolicyLoader | undefined;
  readonly #references: readonly string[];
  readonly #evaluatorOptions: XacmlEvaluatorOptions;
  #state: XacmlPolicyState | undefined;
  /** The key (documents) of the policy in force, to skip compiling an unchanged text. */
  #key: string | undefined;
  /** The key of the last text that failed to compile, with its error, so a broken text is not compiled again and again. */
  #failed: { key: string; error: Error } | undefined;
  /** The error of the last load or compile, cleared by the next success. */
  #lastError: Error | undefined;
  #stale: boolean;
  #loading: Promise<XacmlPolicyState> | undefined;

  constructor(options: XacmlPolicySourceOptions) {
    const check = optionChecks('XacmlPolicySource');
    const { policy, references, ...evaluatorOptions } = check.known(
      check.object<XacmlPolicySourceOptions>(options, ''),
      '',
      POLICY_SOURCE_KEYS,
    );
    checkEvaluatorOptions(check, evaluatorOptions);
    if (references !== undefined && (!Array.isArray(references) || references.some((r) => typeof r !== 'string'))) {
      check.fail('references', 'must be an array of XML strings');
    }
    this.#references = references ?? [];
    this.#evaluatorOptions = evaluatorOptions;
    if (typeof policy === 'function') {
      this.#loader = policy;
      this.#stale = true;
    } else {
      if (!validDocuments(policy)) check.fail('policy', DOCUMENTS);
      const path = filePathOf(policy);
      if (path !== undefined) check.fail('policy', filePathHint(path));
      this.#loader = undefined;
      this.#stale = false;
      this.#install(policy);
    }
  }

  /** The version of the policy in force (0 before the first successful load). */
  get version(): number {
    return this.#state?.version ?? 0;
  }

  /**
   * Whether an `attributeFinder` supplies attributes the requests lack: then a decision may depend
   * on more than the request, and `xacmlAuthorize` does not reuse decisions.
   */
  get hasAttributeFinder(): boolean {
    return this.#evaluatorOptions.attributeFinder !== undefined;
  }

  /** The error of the last failed load or compile, if the last attempt failed. */
  get lastError(): Error | undefined {
    return this.#lastError;
  }

  /**
   * The policy in force: synchronously when it is loaded and not reset (the hot path), otherwise a
   * promise that loads it first (one load at a time, shared by concurrent callers). Rejects only
   * when no policy was ever loaded successfully.
   */
  get(): XacmlPolicyState | Promise<XacmlPolicyState> {
    if (!this.#stale && this.#state !== undefined) return this.#state;
    this.#loading ??= this.#load().finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  /**
   * Marks the policy stale: the next request calls the loader again (ResetAllCaches). The policy
   * in force keeps answering until a new one compiles. No effect on a policy given as text.
   */
  reset(): void {
    if (this.#loader !== undefined) this.#stale = true;
  }

  /**
   * Loads and compiles the policy now. Resolves with the policy in force; rejects with the load or
   * compile error (the previous policy, if any, stays in force).
   */
  async reload(): Promise<XacmlPolicyState> {
    this.reset();
    const state = await this.get();
    if (state.reloadError) throw state.reloadError;
    return state;
  }

  /**
   * Compiles `policy` and puts it in force (an uploaded policy). Throws `XacmlSyntaxError` (or
   * `TypeError`) when it is invalid, leaving the previous policy in force.
   */
  update(policy: XacmlPolicyDocuments): XacmlPolicyState {
    if (!validDocuments(policy)) throw new TypeError(`XacmlPolicySource.update: policy ${DOCUMENTS}`);
    this.#install(policy);
    this.#stale = false;
    return this.#state as XacmlPolicyState;
  }

  async #load(): Promise<XacmlPolicyState> {
    const loader = this.#loader;
    if (loader === undefined) return this.#state as XacmlPolicyState;
    try {
      const documents = await loader();
      if (!validDocuments(documents)) throw new TypeError(`the loaded policy ${DOCUMENTS}`);
      this.#install(documents);
      this.#stale = false;
      return this.#state as XacmlPolicyState;
    } catch (cause) {
      const error = cause instanceof Error ? cause : new Error(String(cause));
      this.#lastError = error;
      log(
        'policy load failed, %s: %s',
        this.#state ? `version ${this.#state.version} stays in force` : 'no policy in force',
        error.message,
      );
      if (this.#state === undefined) throw error;
      // Keep the previous policy until the next reset: retrying on every request would compile on the hot path.
      this.#stale = false;
      return { ...this.#state, reloadError: error };
    }
  }

  /** Compiles `documents` unless they are the ones in force (or the last ones that failed). */
  #install(documents: XacmlPolicyDocuments): void {
    const { policies, references } = normalize(documents, this.#references);
    const key = JSON.stringify([policies, references]);
    if (key === this.#key) {
      this.#lastError = undefined;
      return;
    }
    if (key === this.#failed?.key) throw this.#failed.error;
    let pdp: Pdp;
    try {
      pdp = createPdp({ ...this.#evaluatorOptions, policies, references });
    } catch (cause) {
      const error = cause instanceof Error ? cause : new Error(String(cause));
      this.#failed = { key, error };
      this.#lastError = error;
      throw error;
    }
    this.#failed = undefined;
    this.#lastError = undefined;
    this.#key = key;
    this.#state = { pdp, version: (this.#state?.version ?? 0) + 1 };
    log('policy version %d compiled', this.#state.version);
  }
}

function normalize(documents: XacmlPolicyDocuments, extraReferences: readonly string[]): { policies: string[]; references: string[] } {
  if (typeof documents === 'string') return { policies: [documents], references: [...extraReferences] };
  if (isDocumentList(documents)) return { policies: [...documents], references: [...extraReferences] };
  return { policies: [...documents.policies], references: [...(documents.references ?? []), ...extraReferences] };
}

function isDocumentList(documents: XacmlPolicyDocuments): documents is readonly string[] {
  return Array.isArray(documents);
}

/**
 * Checks the evaluator options at factory time (those `createPdp` would otherwise check only when
 * a loaded policy is first compiled), in the words of the factory given them.  @internal
 */
export function checkEvaluatorOptions(check: OptionChecks, options: XacmlEvaluatorOptions): void {
  check.optionalFunction(options.attributeFinder, 'attributeFinder');
  check.optionalFunction(options.resourceChildren, 'resourceChildren');
  check.optionalFunction(options.now, 'now');
  if (options.limits !== undefined) {
    const limits = check.object<NonNullable<XacmlEvaluatorOptions['limits']>>(options.limits, 'limits');
    check.positive(limits.maxSize, 'limits.maxSize', 1, true);
    check.positive(limits.maxDepth, 'limits.maxDepth', 1, true);
  }
  check.nonNegative(options.maxXPathAttributes, 'maxXPathAttributes', 0, true);
}

const DOCUMENTS = 'must be XACML policy XML text, a non-empty array of them, or { policies, references }';

/**
 * A document of `documents` that is a file's path rather than XML (`policies/petstore.xml`): no
 * markup, one word, a path separator or an `.xml` ending.  @internal
 */
export function filePathOf(documents: XacmlPolicyDocuments): string | undefined {
  // Called before the documents' shape is checked: anything else is not a path.
  const given: unknown = typeof documents === 'string' ? [documents] : isDocumentList(documents) ? documents : documents?.policies;
  if (!Array.isArray(given)) return undefined;
  return (given as unknown[]).find((text): text is string => {
    if (typeof text !== 'string') return false;
    const trimmed = text.trim();
    return !trimmed.includes('<') && /^\S+$/.test(trimmed) && (/[\\/]/.test(trimmed) || /\.xml$/i.test(trimmed));
  });
}

/** The message for a policy given as a file's path.  @internal */
export function filePathHint(path: string): string {
  return `is ${JSON.stringify(path.trim().slice(0, 200))}, which looks like a file path; pass the document's text (readFileSync) or use the configuration file's \`policy\` path`;
}

function validDocuments(documents: unknown): documents is XacmlPolicyDocuments {
  const strings = (v: unknown): boolean => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x.trim() !== '');
  return (
    (typeof documents === 'string' && documents.trim() !== '') ||
    strings(documents) ||
    (documents !== null &&
      typeof documents === 'object' &&
      strings((documents as { policies?: unknown }).policies) &&
      ((documents as { references?: unknown }).references === undefined ||
        Array.isArray((documents as { references?: unknown }).references)))
  );
}

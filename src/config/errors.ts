/**
 * The error of a configuration that cannot be used.
 *
 * @module
 */

/** One problem found in a configuration: where and what. */
export interface ConfigIssue {
  /** Path of the bad field, for example `apis[0].backend.url` (empty for the whole document). */
  readonly path: string;
  /** What is wrong, for example `must be an http(s) URL`. */
  readonly message: string;
}

/**
 * Thrown when a gateway configuration fails validation (at start, or at a reload, where the
 * previous configuration stays in force). Its message names every bad field:
 * `apis[0].backend.url: must be an http(s) URL`.
 */
export class ConfigError extends Error {
  /** Always `ERR_CONFIG_INVALID`. */
  readonly code = 'ERR_CONFIG_INVALID' as const;
  /** Every problem found, in document order. */
  readonly issues: readonly ConfigIssue[];
  /** The configuration's origin (file path, `object` or `loader`), when known. */
  readonly source: string | undefined;

  /**
   * @param options.document What the source holds, as the message names it (`invalid users file
   * (users.json): ...`). Default `gateway configuration`.
   */
  constructor(issues: readonly ConfigIssue[], source?: string, options?: { cause?: unknown; document?: string }) {
    const lines = issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`));
    const document = options?.document ?? 'gateway configuration';
    super(
      `${source === undefined ? `invalid ${document}` : `invalid ${document} (${source})`}: ${lines.join('; ')}`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'ConfigError';
    this.issues = issues;
    this.source = source;
  }

  /** The path of the first bad field. */
  get path(): string {
    return this.issues[0]?.path ?? '';
  }
}

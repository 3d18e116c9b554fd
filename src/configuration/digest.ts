/**
 * A digest of a validated configuration: what a node has in force and what the configuration
 * source holds are the same configuration exactly when their digests are equal, which is how the
 * console tells "saved, not yet in force" per node.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { ResolvedConfig } from '../config/types.js';

function canonical(value: unknown): unknown {
  if (value instanceof RegExp) return value.source;
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = canonical(v);
    }
    return out;
  }
  return value;
}

/** The SHA-256 (hex, first 16 bytes) of a validated configuration, policy texts included. */
export function configDigest(config: ResolvedConfig): string {
  return createHash('sha256')
    .update(JSON.stringify(canonical(config)))
    .digest('hex')
    .slice(0, 32);
}

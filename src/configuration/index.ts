/**
 * The configuration console's pieces: where the configuration and its versions live (a file, or
 * PostgreSQL), and the answer of a draft policy's what-if.
 *
 * @module
 */
export { FileConfigStore, VersionConflictError } from './store.js';
export { PostgresConfigSource } from './postgres-source.js';
export type { PostgresConfigSourceOptions } from './postgres-source.js';
export type { ConfigProposal, ConfigSnapshot, ConfigStore, ConfigVersion } from './store.js';
export type { SecretState } from './masking.js';
export type { ProposalIssue } from './proposal.js';
export type { DiffLine } from './diff.js';
export type { WhatIfChange, WhatIfDecision, WhatIfReport, WhatIfSkipped, WhatIfSkipReason } from './what-if.js';

/**
 * The configuration console's pieces: where the configuration and its versions live.
 *
 * @module
 */
export { FileConfigStore, VersionConflictError } from './store.js';
export type { ConfigProposal, ConfigSnapshot, ConfigStore, ConfigVersion } from './store.js';
export type { SecretState } from './masking.js';
export type { ProposalIssue } from './proposal.js';
export type { DiffLine } from './diff.js';

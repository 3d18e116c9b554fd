/**
 * The operators' jobs: pure functions of plain data (what structured clone carries) that compile
 * policies, read OpenAPI documents, evaluate what-ifs (of XACML policies and of traffic policies),
 * check a save's proposal, replay scope rules over recorded calls and compare versions. They run in a worker thread (see `pool.ts`), never on the event loop that serves APIs.
 *
 * @module
 */
import type { OperationConfig } from '../../config/types.js';
import { snapshotDiff, type DiffLine } from '../diff.js';
import { OperationOrderError } from '../operation-order.js';
import { mergeOperations, operationsFromOpenApi, type ImportMode, type OpenApiImport, type OperationChanges } from '../openapi.js';
import { compilePolicy, policyIssues } from '../policy-check.js';
import { proposalIssues, type ProposalGateway, type ProposalIssue } from '../proposal.js';
import type { ConfigProposal, ConfigSnapshot } from '../store.js';
import { evaluateWhatIf, whatIfRecordsOf, whatIfSummary, type WhatIfRecordBytes } from '../what-if.js';
import { encodeText } from './transfer.js';
import type { TrafficSimulation } from '../../traffic/simulate.js';
import type { TransactionRows } from '../traffic-rows.js';
import { trafficWhatIf, type TrafficDraft } from '../traffic-what-if.js';
import type { ScopeRules } from '../../authorize/scopes.js';
import { scopeWhatIf, type ScopeWhatIfReport, type ScopeWhatIfRows } from '../scope-what-if.js';

/** A policy and its references, as the gateway compiles them, and where an issue is reported. */
export interface PolicyDraft {
  /** The policy's text. */
  text: string;
  /** The texts of the policies it references. */
  references: string[];
  /** The policy file, named by an issue. */
  file: string;
  /** The configuration field an issue is at (`apis[0].authorization.policy`). */
  at: string;
}

/** What an OpenAPI import reads and, when the document has no problem, the API's operations after it. */
export interface OpenApiImportResult {
  /** The document's operations, or its problems. */
  read: OpenApiImport;
  /** The API's operations after the import, and what changed (absent when `read` has issues). */
  merged?: { operations: OperationConfig[]; changes: OperationChanges };
}

/** Every job: its input and its answer. */
export interface Jobs {
  /** A policy compiled as the gateway compiles it: its issues (none when valid). */
  checkPolicy: { input: PolicyDraft; output: ProposalIssue[] };
  /** A save's proposal checked as the file is, every policy compiled: its issues. */
  checkProposal: {
    input: { proposal: ConfigProposal; saved: Pick<ConfigSnapshot, 'policies'>; maxCompileMs: number; gateway: ProposalGateway };
    output: ProposalIssue[];
  };
  /** An OpenAPI document read (at most `maxBytes`) and merged into an API's operations. */
  importOpenApi: {
    input: { text: string; maxBytes: number; existing: OperationConfig[] | undefined; mode: ImportMode };
    output: OpenApiImportResult;
  };
  /** A draft compiled and evaluated against recorded transactions: the report, or the draft's issues. */
  whatIf: {
    input: { draft: PolicyDraft; api: string; limit: number; read: WhatIfRecordBytes; answer: Record<string, unknown> };
    /** The answer's body (the report and `answer`'s members) as UTF-8 JSON, and its summary for the audit. */
    output: { body: Uint8Array; summary: string } | { issues: ProposalIssue[] };
  };
  /** A draft traffic policy checked with the configuration and simulated over recorded transactions, or its issues. */
  trafficWhatIf: {
    input: { draft: TrafficDraft; rows: TransactionRows };
    output: { simulation: TrafficSimulation } | { issues: ProposalIssue[] };
  };
  /** Recorded calls routed to an API's operations and checked against its scope rules: the refusals, by operation. */
  scopeWhatIf: {
    input: { api: ScopeRules; operations: OperationConfig[] | undefined; calls: ScopeWhatIfRows };
    output: ScopeWhatIfReport;
  };
  /** The line differences of two versions. */
  diff: { input: { from: ConfigSnapshot; to: ConfigSnapshot; label: string }; output: Array<{ file: string; lines: DiffLine[] }> };
}

/** The name of a job. */
export type JobKind = keyof Jobs;

/** The functions, by job. */
export const jobs: { [K in JobKind]: (input: Jobs[K]['input']) => Jobs[K]['output'] | Promise<Jobs[K]['output']> } = {
  checkPolicy: ({ text, references, file, at }) => policyIssues(text, references, file, at),
  checkProposal: ({ proposal, saved, maxCompileMs, gateway }) => proposalIssues(proposal, saved, maxCompileMs, gateway),
  async importOpenApi({ text, maxBytes, existing, mode }) {
    const read = await operationsFromOpenApi(text, maxBytes);
    if (read.issues.length > 0) return { read };
    try {
      return { read, merged: mergeOperations(existing, read.operations, mode) };
    } catch (err) {
      // Templates written to overlap by the thousand: refused as the document's fault, after bounded work.
      if (err instanceof OperationOrderError) return { read: { ...read, issues: [{ path: 'paths', message: err.message }] } };
      throw err;
    }
  },
  whatIf({ draft, api, limit, read, answer }) {
    // The draft's clock: each transaction is evaluated at the time it was made.
    const clock = { at: Date.now() };
    const compiled = compilePolicy(draft.text, draft.references, draft.file, draft.at, { now: () => new Date(clock.at) });
    if (compiled.issues !== undefined) return { issues: compiled.issues };
    const report = evaluateWhatIf(compiled.pdp, clock, api, limit, whatIfRecordsOf(read));
    // Serialized here: the gateway's thread sends these bytes as they are.
    return { body: encodeText(JSON.stringify({ ...report, ...answer })), summary: whatIfSummary(report) };
  },
  trafficWhatIf: ({ draft, rows }) => trafficWhatIf(draft, rows),
  scopeWhatIf: ({ api, operations, calls }) => scopeWhatIf(api, operations, calls),
  diff: ({ from, to, label }) => snapshotDiff(from, to, label),
};

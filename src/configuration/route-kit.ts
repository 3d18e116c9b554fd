/**
 * How the configuration API's routes answer: a read, a failure (the catalogue's answer, a request's
 * fault, a conflict), a change (the body read, the proposal built from the latest version,
 * validated in a worker, saved as a version, audited), and the helpers the routes share.
 *
 * @module
 */
import type { Request, Response } from 'express';
import { isGatewayError, messagesEn } from '../errors.js';
import { ConfigError } from '../config/errors.js';
import type { ApiConfig, GatewayConfig } from '../config/types.js';
import { logger } from '../log.js';
import { operatorOf, type OperatorAccess } from '../operators/access.js';
import { problem } from '../admin/problem.js';
import { BodyError, readJson, titleOf } from '../operators/http.js';
import type { OperatorWorkPool } from './work/pool.js';
import { renderProblem } from '../problem/render.js';
import type { ProposalGateway, ProposalIssue } from './proposal.js';
import { restoreSecrets } from './masking.js';
import { trafficChanges } from './traffic-changes.js';
import { VersionConflictError, type ConfigProposal, type ConfigSnapshot, type ConfigStore } from './store.js';

const log = logger('configuration');

/** Room in a body for what surrounds its largest document (and the document's JSON escapes). */
const BODY_SLACK = 1024 * 1024;

/** An API's key, `provider/name/vN`. */
export function apiKeyOf(api: { provider?: unknown; name?: unknown; version?: unknown }): string {
  return `${String(api.provider)}/${String(api.name)}/v${String(api.version)}`;
}

/** What changed between two documents, in a few words, for the audit log. */
export function summary(before: GatewayConfig, after: GatewayConfig, policies: string[]): string {
  const parts: string[] = [];
  // An API's traffic policies are told one by one below, not as the API's change.
  const keyed = (apis: ApiConfig[] | undefined) =>
    new Map((Array.isArray(apis) ? apis : []).map((a) => [apiKeyOf(a), JSON.stringify({ ...a, trafficControl: undefined })]));
  const a = keyed(before.apis);
  const b = keyed(after.apis);
  for (const [k, v] of b)
    if (!a.has(k)) parts.push(`API ${k} added`);
    else if (a.get(k) !== v) parts.push(`API ${k} changed`);
  for (const k of a.keys()) if (!b.has(k)) parts.push(`API ${k} removed`);
  const tp = (c: GatewayConfig) => c.tokenPolicies ?? {};
  for (const [k, v] of Object.entries(tp(after))) {
    const old = tp(before)[k];
    if (old === undefined) parts.push(`token policy ${k} added`);
    else if (JSON.stringify(old) !== JSON.stringify(v))
      parts.push(`token policy ${k} changed${old.clientSecret !== v.clientSecret ? ' (secret changed)' : ''}`);
  }
  for (const k of Object.keys(tp(before))) if (!(k in tp(after))) parts.push(`token policy ${k} removed`);
  if (JSON.stringify(before.applications ?? {}) !== JSON.stringify(after.applications ?? {})) parts.push('applications changed');
  parts.push(...trafficChanges(before, after, apiKeyOf));
  for (const p of policies) parts.push(`policy ${p} uploaded`);
  return parts.join('; ') || 'no change';
}

/** What a change builds: the proposal and what it is about (for the audit log). */
export interface Built {
  proposal: ConfigProposal;
  target: string;
  /** The version's comment when the operator gives none (default: what changed). */
  comment?: string;
  /** More of the answer (an import's changes). */
  extra?: Record<string, unknown>;
  /** Says more about an issue of the proposal (where an imported operation came from). */
  explain?: (issue: ProposalIssue) => ProposalIssue;
}

export class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** The fields every change carries: a comment, and optionally the version it was made on. */
export function changeMeta(body: Record<string, unknown>): { comment: string; baseVersion: number | undefined } {
  const comment = body['comment'];
  if (comment !== undefined && (typeof comment !== 'string' || comment.length > 500))
    throw new RequestError(400, 'comment must be a string of at most 500 characters');
  const base = body['baseVersion'];
  if (base !== undefined && (!Number.isSafeInteger(base) || (base as number) < 1))
    throw new RequestError(400, 'baseVersion must be a version number');
  return { comment: typeof comment === 'string' ? comment.trim() : '', baseVersion: base as number | undefined };
}

export function objectBody(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new RequestError(400, 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

export function findApi(document: GatewayConfig, req: Request): number {
  const key = `${String(req.params['provider'])}/${String(req.params['name'])}/v${String(req.params['version'])}`;
  const index = (Array.isArray(document.apis) ? document.apis : []).findIndex((api) => apiKeyOf(api) === key);
  if (index === -1) throw new RequestError(404, `no API ${key}`);
  return index;
}

/** A signal that aborts when the operator goes away before the answer: a job still queued for them is dropped. */
export function operatorGone(res: Response): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** A document's size against its cap: 413 naming both (`subject` is the document, `noun` any such one). */
export function checkSize(text: string, subject: string, noun: string, max: number): void {
  const size = Buffer.byteLength(text, 'utf8');
  if (size > max) throw new RequestError(413, `${subject} is ${size} bytes: the most ${noun} may have is ${max} bytes`);
}

/** How the routes answer: a read, a failure, a change (validated, saved as a version, audited). */
export interface RouteKit {
  read(handler: (req: Request, signal: AbortSignal) => Promise<unknown>): (req: Request, res: Response) => void;
  fail(res: Response, err: unknown): void;
  change(
    action: string,
    build: (latest: ConfigSnapshot, body: Record<string, unknown>, req: Request, signal: AbortSignal) => Built | Promise<Built>,
    status?: number,
  ): (req: Request, res: Response) => void;
  /** Most bytes of a body: the largest document and room around it. */
  readonly maxBody: number;
}

/** `gateway`: what the gateway has beside the file, checked at each save (its Redis). */
export function routeKit(access: OperatorAccess, store: ConfigStore, work: OperatorWorkPool, gateway: ProposalGateway = {}): RouteKit {
  const maxBody = Math.max(work.limits.maxPolicyBytes, work.limits.maxOpenApiBytes) + BODY_SLACK;
  const read = (handler: (req: Request, signal: AbortSignal) => Promise<unknown>) => (req: Request, res: Response) => {
    handler(req, operatorGone(res)).then(
      (body) => res.status(200).json(body),
      (err: unknown) => fail(res, err),
    );
  };
  const fail = (res: Response, err: unknown): void => {
    if (res.headersSent || res.destroyed) return;
    if (isGatewayError(err)) {
      // The operators' work refused or stopped the job: the catalogue's answer, with its code.
      const rendered = renderProblem(err, messagesEn);
      if (rendered.headers['retry-after'] !== undefined) res.setHeader('Retry-After', rendered.headers['retry-after']);
      return problem(res, rendered.status, rendered.body.title, rendered.body.detail, {
        gateway_status: rendered.body.gateway_status,
        code: err.code,
      });
    }
    if (err instanceof RequestError) return problem(res, err.status, titleOf(err.status), err.message, err.extra);
    if (err instanceof BodyError) return problem(res, err.status, titleOf(err.status), err.message);
    if (err instanceof VersionConflictError) return problem(res, 409, 'Conflict', err.message, { latest: err.latest });
    if (err instanceof ConfigError)
      return problem(res, 422, 'Unprocessable Content', `the saved configuration cannot be read: ${err.message}`, { issues: err.issues });
    log('configuration API failed: %s', (err as Error)?.message ?? String(err));
    problem(res, 500, 'Internal Server Error', 'the configuration could not be read or saved');
  };

  /**
   * One change: read the body, build the proposal from the latest version, validate, save, audit.
   * `build` returns the new document (a copy it may edit) and the policies it uploads.
   */
  const change =
    (
      action: string,
      build: (latest: ConfigSnapshot, body: Record<string, unknown>, req: Request, signal: AbortSignal) => Built | Promise<Built>,
      status = 200,
    ) =>
    (req: Request, res: Response) => {
      const author = operatorOf(req)!.username;
      const signal = operatorGone(res);
      let targetName = '';
      let dryRun = false;
      readJson(req, res, maxBody)
        .then(async (raw) => {
          const body = objectBody(raw);
          const { comment, baseVersion } = changeMeta(body);
          if (body['dryRun'] !== undefined && typeof body['dryRun'] !== 'boolean') throw new RequestError(400, 'dryRun must be a boolean');
          dryRun = body['dryRun'] === true;
          const latest = await store.current();
          const built = await build(latest, body, req, signal);
          targetName = built.target;
          const proposal = built.proposal;
          for (const [file, text] of Object.entries(proposal.policies ?? {}))
            checkSize(text, `the policy ${file}`, 'a policy', work.limits.maxPolicyBytes);
          // A saved secret kept while the issuer or an endpoint moves is refused (not restored).
          const kept = restoreSecrets(proposal.document, latest.document);
          const checked = await work.run(
            'checkProposal',
            { proposal, saved: { policies: latest.policies }, maxCompileMs: work.limits.maxCompileMs, gateway },
            signal,
          );
          const issues: ProposalIssue[] = [...kept, ...checked.filter((i) => !kept.some((k) => k.path === i.path))].map(
            built.explain ?? ((i) => i),
          );
          if (issues.length > 0)
            throw new RequestError(
              422,
              `${issues.length} problem(s): ${issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`)).join('; ')}`,
              { issues },
            );
          // A dry run: validated and answered, nothing saved, nothing to log.
          if (dryRun) return void res.status(200).json({ dryRun: true, baseVersion: latest.meta.version, ...(built.extra ?? {}) });
          const what = summary(
            latest.document,
            proposal.document,
            Object.keys(proposal.policies ?? {}).filter((p) => proposal.policies![p] !== latest.policies[p]),
          );
          const version = await store.save(proposal, { author, comment: comment || built.comment || what }, baseVersion);
          await access.record(req, {
            action,
            target: targetName,
            result: 'ok',
            status,
            detail: `version ${version.version}: ${what}${comment ? ` (${comment})` : ''}`,
          });
          res.status(status).json({
            version,
            inForce: false,
            message: 'saved, not yet in force: ResetAllCaches (or the configuration expiring) puts it in force',
            ...(built.extra ?? {}),
          });
        })
        .catch(async (err: unknown) => {
          if (dryRun && !(err instanceof BodyError)) return fail(res, err);
          const code =
            err instanceof RequestError || isGatewayError(err)
              ? err.status
              : err instanceof VersionConflictError
                ? 409
                : err instanceof BodyError
                  ? err.status
                  : 500;
          await access
            .record(req, {
              action,
              target: targetName || req.path,
              result: code >= 500 ? 'failed' : 'refused',
              status: code,
              detail: (err as Error)?.message?.slice(0, 500) ?? 'failed',
            })
            .catch(() => undefined);
          fail(res, err);
        });
    };

  return { read, fail, change, maxBody };
}

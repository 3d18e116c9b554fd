/**
 * The configuration API on the admin listener (`<basePath>/configuration/api`): read every API,
 * token policy and policy (secrets never shown), change them with the file's validation, add and
 * remove APIs and operations, upload policies, list, compare and restore versions, and see per
 * node whether the saved configuration is in force.
 *
 * @module
 */
import { Router, type Request, type Response } from 'express';
import { isGatewayError, messagesEn } from '../errors.js';
import { ConfigError } from '../config/errors.js';
import type { ApiConfig, GatewayConfig, OperationConfig, TokenPolicyConfig } from '../config/types.js';
import { logger } from '../log.js';
import { operatorOf, type OperatorAccess } from '../operators/access.js';
import { pageHeaders } from '../admin/headers.js';
import { problem } from '../admin/problem.js';
import { BodyError, readJson, titleOf } from '../operators/http.js';
import { operatorGate } from '../operators/router.js';
import type { ClusterStatus } from '../cluster/cluster.js';
import type { TransactionStore } from '../record/types.js';
import type { OperatorWorkPool } from './work/pool.js';
import { renderProblem } from '../problem/render.js';
import { readWhatIfRecords, WHAT_IF_DEFAULT, WHAT_IF_MAX, whatIfSummary } from './what-if.js';
import type { ProposalIssue } from './proposal.js';
import { restoreSecrets, withoutSecrets } from './masking.js';
import { VersionConflictError, type ConfigProposal, type ConfigSnapshot, type ConfigStore } from './store.js';

const log = logger('configuration');

/** Room in a body for what surrounds its largest document (and the document's JSON escapes). */
const BODY_SLACK = 1024 * 1024;

/** What the configuration API needs from the gateway. */
export interface ConfigurationTarget {
  /** The digest of the configuration this instance has in force (`undefined` before the first load). */
  readonly configVersion: string | undefined;
  /** This instance's id. */
  readonly nodeId: string;
  /** When the configuration in force was loaded and expires. */
  readonly configState: { loadedAt?: number; expiresAt?: number; lastError?: { message: string } };
  /** The instances (with Redis). */
  clusterStatus(): Promise<ClusterStatus | undefined>;
  /** Where transactions are recorded: the what-if reads an API's recorded XACML requests from it. */
  readonly store: TransactionStore;
}

/** One node as the console shows it. */
export interface NodeConfigState {
  /** The node's id. */
  nodeId: string;
  /** Digest of the configuration it has in force. */
  configVersion?: string;
  /** Epoch ms it was loaded. */
  loadedAt?: number;
  /** Epoch ms it expires. */
  expiresAt?: number;
  /** `in force`: the node runs the latest saved version; `saved, not yet in force`: it runs another. */
  state: 'in force' | 'saved, not yet in force' | 'unknown';
  /** The version number the node runs, when it is one of the saved ones. */
  version?: number;
}

function apiKeyOf(api: { provider?: unknown; name?: unknown; version?: unknown }): string {
  return `${String(api.provider)}/${String(api.name)}/v${String(api.version)}`;
}

function publicSnapshot(snapshot: ConfigSnapshot): Record<string, unknown> {
  const { document, secrets } = withoutSecrets(snapshot.document);
  return { version: snapshot.meta, document, secrets, policies: snapshot.policies };
}

/** What changed between two documents, in a few words, for the audit log. */
function summary(before: GatewayConfig, after: GatewayConfig, policies: string[]): string {
  const parts: string[] = [];
  const keyed = (apis: ApiConfig[] | undefined) => new Map((Array.isArray(apis) ? apis : []).map((a) => [apiKeyOf(a), JSON.stringify(a)]));
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
  for (const p of policies) parts.push(`policy ${p} uploaded`);
  return parts.join('; ') || 'no change';
}

/** What a change builds: the proposal and what it is about (for the audit log). */
interface Built {
  proposal: ConfigProposal;
  target: string;
  /** The version's comment when the operator gives none (default: what changed). */
  comment?: string;
  /** More of the answer (an import's changes). */
  extra?: Record<string, unknown>;
  /** Says more about an issue of the proposal (where an imported operation came from). */
  explain?: (issue: ProposalIssue) => ProposalIssue;
}

class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** The fields every change carries: a comment, and optionally the version it was made on. */
function changeMeta(body: Record<string, unknown>): { comment: string; baseVersion: number | undefined } {
  const comment = body['comment'];
  if (comment !== undefined && (typeof comment !== 'string' || comment.length > 500))
    throw new RequestError(400, 'comment must be a string of at most 500 characters');
  const base = body['baseVersion'];
  if (base !== undefined && (!Number.isSafeInteger(base) || (base as number) < 1))
    throw new RequestError(400, 'baseVersion must be a version number');
  return { comment: typeof comment === 'string' ? comment.trim() : '', baseVersion: base as number | undefined };
}

function objectBody(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new RequestError(400, 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

function findApi(document: GatewayConfig, req: Request): number {
  const key = `${String(req.params['provider'])}/${String(req.params['name'])}/v${String(req.params['version'])}`;
  const index = (Array.isArray(document.apis) ? document.apis : []).findIndex((api) => apiKeyOf(api) === key);
  if (index === -1) throw new RequestError(404, `no API ${key}`);
  return index;
}

/** A signal that aborts when the operator goes away before the answer: a job still queued for them is dropped. */
function operatorGone(res: Response): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** A document's size against its cap: 413 naming both (`subject` is the document, `noun` any such one). */
function checkSize(text: string, subject: string, noun: string, max: number): void {
  const size = Buffer.byteLength(text, 'utf8');
  if (size > max) throw new RequestError(413, `${subject} is ${size} bytes: the most ${noun} may have is ${max} bytes`);
}

/**
 * The configuration API's router. Reading needs any role; changes need `admin` (and, with a
 * session, its `X-CSRF-Token`). Every change is validated as the configuration file is (422 with
 * `issues`, each naming its field; a policy issue also its element and line), saved as a new
 * version, logged in the audit log, and in force only after ResetAllCaches or expiry. Compiling
 * policies, reading OpenAPI documents, what-ifs and diffs run in `work`'s worker threads.
 */
export function configurationRouter(
  access: OperatorAccess,
  store: ConfigStore,
  target: ConfigurationTarget,
  work: OperatorWorkPool,
): Router {
  const router = Router();
  router.use(pageHeaders);
  router.use(
    operatorGate(access, (req) =>
      req.method === 'GET' || req.method === 'HEAD' ? 'viewer' : req.path === '/policies/check' ? 'viewer' : 'admin',
    ),
  );

  const kit = routeKit(access, store, work);
  readingRoutes(router, kit, store, target, work);
  changeRoutes(router, kit, store, work);
  policyRoutes(router, kit, access, store, target, work);
  return router;
}

/** How the routes answer: a read, a failure, a change (validated, saved as a version, audited). */
interface RouteKit {
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

function routeKit(access: OperatorAccess, store: ConfigStore, work: OperatorWorkPool): RouteKit {
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
            { proposal, saved: { policies: latest.policies }, maxCompileMs: work.limits.maxCompileMs },
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

/** The reading routes: the configuration, its versions and diffs, a policy, each node's state. */
function readingRoutes(router: Router, { read }: RouteKit, store: ConfigStore, target: ConfigurationTarget, work: OperatorWorkPool): void {
  // ---- reading -------------------------------------------------------------------------------

  router.get(
    '/config',
    read(async (req) => {
      const latest = await store.current();
      const operator = operatorOf(req)!;
      return { ...publicSnapshot(latest), source: store.label, role: operator.role, canEdit: operator.role === 'admin' };
    }),
  );
  router.get(
    '/versions',
    read(async () => ({ items: await store.list() })),
  );
  router.get(
    '/versions/:n',
    read(async (req) => {
      const snapshot = await store.get(Number(req.params['n']));
      if (snapshot === undefined) throw new RequestError(404, `no version ${String(req.params['n'])}`);
      return publicSnapshot(snapshot);
    }),
  );
  router.get(
    '/diff',
    read(async (req, signal) => {
      const from = await store.get(Number(req.query['from']));
      const to = await store.get(Number(req.query['to']));
      if (from === undefined || to === undefined) throw new RequestError(404, 'from and to must be version numbers');
      const files = await work.run('diff', { from, to, label: store.label.split(/[\\/]/).pop() ?? 'configuration' }, signal);
      return { from: from.meta, to: to.meta, files };
    }),
  );
  router.get(
    '/apis/:provider/:name/:version/policy',
    read(async (req) => {
      const latest = await store.current();
      const api = latest.document.apis[findApi(latest.document, req)]!;
      if (api.authorization?.mode !== 'xacml-Policy') throw new RequestError(404, `${apiKeyOf(api)} has no XACML policy`);
      const text = latest.policies[api.authorization.policy];
      return { file: api.authorization.policy, text: text ?? null };
    }),
  );
  router.get(
    '/state',
    read(async () => {
      const latest = await store.current();
      const versions = await store.list();
      const byDigest = new Map(versions.filter((v) => v.digest !== '').map((v) => [v.digest, v.version]));
      const describe = (nodeId: string, configVersion: string | undefined, loadedAt?: number, expiresAt?: number): NodeConfigState => {
        const node: NodeConfigState = {
          nodeId,
          state: configVersion === undefined ? 'unknown' : configVersion === latest.meta.digest ? 'in force' : 'saved, not yet in force',
        };
        if (configVersion !== undefined) node.configVersion = configVersion;
        const version = configVersion === undefined ? undefined : byDigest.get(configVersion);
        if (version !== undefined) node.version = version;
        if (loadedAt !== undefined) node.loadedAt = loadedAt;
        if (expiresAt !== undefined) node.expiresAt = expiresAt;
        return node;
      };
      const own = target.configState;
      const nodes: NodeConfigState[] = [describe(target.nodeId, target.configVersion, own.loadedAt, own.expiresAt)];
      const cluster = await target.clusterStatus().catch(() => undefined);
      for (const node of cluster?.nodes ?? []) {
        if (node.id === target.nodeId) continue;
        nodes.push(
          describe(
            node.id,
            typeof node.configVersion === 'string' ? node.configVersion : undefined,
            node.configLoadedAt,
            node.configExpiresAt,
          ),
        );
      }
      return { saved: latest.meta, nodes, ...(own.lastError === undefined ? {} : { lastError: own.lastError.message }) };
    }),
  );
}

/** The operations of an API imported from an OpenAPI document (read and merged in a worker). */
function importRoute(router: Router, change: RouteKit['change'], work: OperatorWorkPool): void {
  router.post(
    '/apis/:provider/:name/:version/operations/openapi',
    change('operations.import', async (latest, body, req, signal) => {
      const text = body['text'];
      if (typeof text !== 'string') throw new RequestError(400, 'text must be the OpenAPI document (JSON or YAML)');
      const mode = body['mode'] ?? 'merge';
      if (mode !== 'merge' && mode !== 'replace') throw new RequestError(400, 'mode must be merge or replace');
      checkSize(text, 'the OpenAPI document', 'an OpenAPI document', work.limits.maxOpenApiBytes);
      const document = structuredClone(latest.document);
      const index = findApi(document, req);
      const api = document.apis[index]!;
      const { read, merged } = await work.run(
        'importOpenApi',
        { text, maxBytes: work.limits.maxOpenApiBytes, existing: api.operations, mode },
        signal,
      );
      if (merged === undefined) {
        const issues = read.issues.map((i) => ({ ...i, file: 'OpenAPI document' }));
        throw new RequestError(
          422,
          `the OpenAPI document: ${issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`)).join('; ')}`,
          { issues },
        );
      }
      const { operations, changes } = merged;
      api.operations = operations;
      const fromOf = new Map(read.operations.map((op) => [op.name, op.from]));
      const at = `apis[${index}].operations[`;
      const named = [
        changes.added.length && `${changes.added.length} added`,
        changes.changed.length && `${changes.changed.length} changed`,
        changes.removed.length && `${changes.removed.length} removed`,
      ].filter(Boolean);
      return {
        proposal: { document },
        target: `${apiKeyOf(api)} operations`,
        comment: `operations imported from OpenAPI${read.title === undefined ? '' : ` ${read.title}${read.version === undefined ? '' : ` ${read.version}`}`}: ${named.join(', ') || 'no change'}`,
        extra: { mode, changes, operations: read.operations, skipped: read.skipped },
        explain: (issue) => {
          if (!issue.path.startsWith(at)) return issue;
          const k = Number(issue.path.slice(at.length).split(']')[0]);
          const from = fromOf.get(operations[k]?.name ?? '');
          return from === undefined ? issue : { ...issue, message: `${issue.message} (from ${from} of the OpenAPI document)` };
        },
      };
    }),
  );
}

/** The changes of the document: the whole, APIs, operations (OpenAPI import too), token policies, a rollback. */
function changeRoutes(router: Router, { change }: RouteKit, store: ConfigStore, work: OperatorWorkPool): void {
  // ---- changes -------------------------------------------------------------------------------

  router.put(
    '/config',
    change('config.save', (latest, body) => {
      const document = body['document'];
      if (document === null || typeof document !== 'object' || Array.isArray(document))
        throw new RequestError(400, 'document must be the configuration object');
      return { proposal: { document: structuredClone(document) as GatewayConfig }, target: 'configuration' };
    }),
  );
  const apiOf = (body: Record<string, unknown>): ApiConfig => {
    const api = body['api'];
    if (api === null || typeof api !== 'object' || Array.isArray(api)) throw new RequestError(400, 'api must be an object');
    return structuredClone(api) as ApiConfig;
  };
  const uploaded = (body: Record<string, unknown>, api: ApiConfig): Record<string, string> | undefined => {
    const policy = body['policy'];
    if (policy === undefined) return undefined;
    if (typeof policy !== 'string') throw new RequestError(400, 'policy must be the XACML text');
    if (api.authorization?.mode !== 'xacml-Policy' || typeof api.authorization.policy !== 'string')
      throw new RequestError(400, 'policy needs authorization mode xacml-Policy with a policy path');
    return { [api.authorization.policy]: policy };
  };
  router.post(
    '/apis',
    change(
      'api.add',
      (latest, body) => {
        const api = apiOf(body);
        const document = structuredClone(latest.document);
        document.apis = [...(Array.isArray(document.apis) ? document.apis : []), api];
        const policies = uploaded(body, api);
        return { proposal: { document, ...(policies === undefined ? {} : { policies }) }, target: apiKeyOf(api) };
      },
      201,
    ),
  );
  router.put(
    '/apis/:provider/:name/:version',
    change('api.change', (latest, body, req) => {
      const document = structuredClone(latest.document);
      const index = findApi(document, req);
      const api = apiOf(body);
      document.apis[index] = api;
      const policies = uploaded(body, api);
      return { proposal: { document, ...(policies === undefined ? {} : { policies }) }, target: apiKeyOf(api) };
    }),
  );
  router.delete(
    '/apis/:provider/:name/:version',
    change('api.remove', (latest, _body, req) => {
      const document = structuredClone(latest.document);
      const index = findApi(document, req);
      const [removed] = document.apis.splice(index, 1);
      return { proposal: { document }, target: apiKeyOf(removed!) };
    }),
  );
  router.post(
    '/apis/:provider/:name/:version/operations',
    change(
      'operation.add',
      (latest, body, req) => {
        const document = structuredClone(latest.document);
        const api = document.apis[findApi(document, req)]!;
        const operation = body['operation'];
        if (operation === null || typeof operation !== 'object' || Array.isArray(operation))
          throw new RequestError(400, 'operation must be an object { name, method, path }');
        const op = operation as OperationConfig;
        if ((api.operations ?? []).some((o) => o.name === op.name))
          throw new RequestError(409, `${apiKeyOf(api)} already has an operation ${String(op.name)}`);
        api.operations = [...(api.operations ?? []), op];
        return { proposal: { document }, target: `${apiKeyOf(api)} ${String(op.name)}` };
      },
      201,
    ),
  );
  importRoute(router, change, work);
  router.delete(
    '/apis/:provider/:name/:version/operations/:operation',
    change('operation.remove', (latest, _body, req) => {
      const document = structuredClone(latest.document);
      const api = document.apis[findApi(document, req)]!;
      const name = String(req.params['operation']);
      const remaining = (api.operations ?? []).filter((o) => o.name !== name);
      if (remaining.length === (api.operations ?? []).length) throw new RequestError(404, `${apiKeyOf(api)} has no operation ${name}`);
      // No operations left: every method and path is relayed, as for an API that lists none.
      if (remaining.length === 0) delete api.operations;
      else api.operations = remaining;
      return { proposal: { document }, target: `${apiKeyOf(api)} ${name}` };
    }),
  );
  router.put(
    '/token-policies/:policy',
    change('token-policy.save', (latest, body, req) => {
      const name = String(req.params['policy']);
      const policy = body['policy'];
      if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) throw new RequestError(400, 'policy must be an object');
      const document = structuredClone(latest.document);
      document.tokenPolicies = { ...(document.tokenPolicies ?? {}), [name]: structuredClone(policy) as TokenPolicyConfig };
      return { proposal: { document }, target: `token policy ${name}` };
    }),
  );
  router.delete(
    '/token-policies/:policy',
    change('token-policy.remove', (latest, _body, req) => {
      const name = String(req.params['policy']);
      const document = structuredClone(latest.document);
      if (document.tokenPolicies?.[name] === undefined) throw new RequestError(404, `no token policy ${name}`);
      delete document.tokenPolicies[name];
      return { proposal: { document }, target: `token policy ${name}` };
    }),
  );
  router.post(
    '/versions/:n/rollback',
    change('rollback', async (_latest, _body, req) => {
      const n = Number(req.params['n']);
      const snapshot = await store.get(n);
      if (snapshot === undefined) throw new RequestError(404, `no version ${String(req.params['n'])}`);
      // The whole version comes back, document and policies, as a new version.
      return {
        proposal: { document: structuredClone(snapshot.document), policies: { ...snapshot.policies } },
        target: `version ${n}`,
        comment: `rollback to version ${n}`,
      };
    }),
  );
}

/** The XACML policy of an API: upload, what-if of a draft, check of a draft. */
function policyRoutes(
  router: Router,
  { change, fail, maxBody }: RouteKit,
  access: OperatorAccess,
  store: ConfigStore,
  target: ConfigurationTarget,
  work: OperatorWorkPool,
): void {
  router.put(
    '/apis/:provider/:name/:version/policy',
    change('policy.upload', (latest, body, req) => {
      const document = structuredClone(latest.document);
      const api = document.apis[findApi(document, req)]!;
      if (api.authorization?.mode !== 'xacml-Policy')
        throw new RequestError(409, `${apiKeyOf(api)} has no XACML policy: set its authorization to xacml-Policy first`);
      const text = body['text'];
      if (typeof text !== 'string' || text.trim() === '') throw new RequestError(400, 'text must be the XACML policy');
      return {
        proposal: { document, policies: { [api.authorization.policy]: text } },
        target: `${apiKeyOf(api)} ${api.authorization.policy}`,
      };
    }),
  );
  // What-if: the draft evaluated against the API's recorded requests. Nothing is saved; it is audited.
  router.post('/apis/:provider/:name/:version/policy/what-if', (req: Request, res: Response) => {
    let targetName = req.path;
    const signal = operatorGone(res);
    readJson(req, res, maxBody)
      .then(async (raw) => {
        const body = objectBody(raw);
        const text = body['text'];
        if (typeof text !== 'string' || text.trim() === '') throw new RequestError(400, 'text must be the XACML policy');
        checkSize(text, 'the policy', 'a policy', work.limits.maxPolicyBytes);
        const asked = body['limit'] === undefined ? WHAT_IF_DEFAULT : body['limit'];
        if (!Number.isSafeInteger(asked) || (asked as number) < 1)
          throw new RequestError(400, `limit must be a whole number of transactions from 1 (at most ${WHAT_IF_MAX} are read)`);
        const limit = Math.min(asked as number, WHAT_IF_MAX);
        const latest = await store.current();
        const index = findApi(latest.document, req);
        const api = latest.document.apis[index]!;
        const az = api.authorization;
        if (az?.mode !== 'xacml-Policy')
          throw new RequestError(409, `${apiKeyOf(api)} has no XACML policy: set its authorization to xacml-Policy first`);
        targetName = `${apiKeyOf(api)} ${az.policy}`;
        // The draft with the API's saved references, compiled once, as an upload would be.
        const at = `apis[${index}].authorization`;
        const references: string[] = [];
        const issues: ProposalIssue[] = [];
        (az.references ?? []).forEach((ref, j) => {
          const refText = latest.policies[ref];
          if (refText === undefined)
            issues.push({ path: `${at}.references[${j}]`, message: `${ref} does not exist: upload the policy with the API` });
          else references.push(refText);
        });
        const refused = (found: ProposalIssue[]): RequestError =>
          new RequestError(422, `${found.length} problem(s): ${found.map((i) => `${i.path}: ${i.message}`).join('; ')}`, { issues: found });
        if (issues.length > 0) throw refused(issues);
        // The records are read here (the store is this thread's); the draft is compiled and evaluated in a worker.
        const read = await readWhatIfRecords(target.store, apiKeyOf(api), limit).catch((err: unknown) => {
          log('what-if: the transaction store failed: %s', (err as Error)?.message ?? String(err));
          throw new RequestError(503, 'the recorded transactions could not be read');
        });
        const ran = await work.run(
          'whatIf',
          { draft: { text, references, file: az.policy, at: `${at}.policy` }, api: apiKeyOf(api), limit, read },
          signal,
        );
        if ('issues' in ran) throw refused(ran.issues);
        const report = ran.report;
        await access.record(req, {
          action: 'policy.what-if',
          target: targetName,
          result: 'ok',
          status: 200,
          detail: whatIfSummary(report),
        });
        res.status(200).json({ ...report, ...(asked !== limit ? { requestedLimit: asked } : {}), file: az.policy, saved: false });
      })
      .catch(async (err: unknown) => {
        const code = err instanceof RequestError || err instanceof BodyError || isGatewayError(err) ? err.status : 500;
        await access
          .record(req, {
            action: 'policy.what-if',
            target: targetName,
            result: code >= 500 ? 'failed' : 'refused',
            status: code,
            detail: (err as Error)?.message?.slice(0, 500) ?? 'failed',
          })
          .catch(() => undefined);
        fail(res, err);
      });
  });
  router.post('/policies/check', (req: Request, res: Response) => {
    const signal = operatorGone(res);
    readJson(req, res, maxBody)
      .then(async (raw) => {
        const body = objectBody(raw);
        const text = body['text'];
        if (typeof text !== 'string') throw new RequestError(400, 'text must be the XACML policy');
        checkSize(text, 'the policy', 'a policy', work.limits.maxPolicyBytes);
        const issues = await work.run('checkPolicy', { text, references: [], file: 'policy', at: 'policy' }, signal);
        res.status(200).json({ valid: issues.length === 0, issues });
      })
      .catch((err: unknown) => fail(res, err));
  });
}

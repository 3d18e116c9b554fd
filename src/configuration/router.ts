/**
 * The configuration API on the admin listener (`<basePath>/configuration/api`): read every API,
 * token policy and policy (secrets never shown), change them with the file's validation, add and
 * remove APIs and operations, upload policies, list, compare and restore versions, and see per
 * node whether the saved configuration is in force.
 *
 * @module
 */
import { Router, type Request, type Response } from 'express';
import { isGatewayError } from '../errors.js';
import type { ApiConfig, GatewayConfig, OperationConfig, TokenPolicyConfig } from '../config/types.js';
import { logger } from '../log.js';
import { operatorOf, type OperatorAccess } from '../operators/access.js';
import { pageHeaders } from '../admin/headers.js';
import { BodyError, readJson } from '../operators/http.js';
import { operatorGate } from '../operators/router.js';
import type { ClusterStatus } from '../cluster/cluster.js';
import type { TransactionStore } from '../record/types.js';
import type { OperatorWorkPool } from './work/pool.js';
import { readWhatIfRecords, WHAT_IF_DEFAULT, WHAT_IF_MAX } from './what-if.js';
import {
  readScopeWhatIfRecords,
  SCOPE_WHAT_IF_DEFAULT,
  SCOPE_WHAT_IF_MAX,
  SCOPE_WHAT_IF_MAX_MINUTES,
  SCOPE_WHAT_IF_MINUTES,
  scopeWhatIfLine,
} from './scope-what-if.js';
import type { ProposalGateway, ProposalIssue } from './proposal.js';
import { withoutSecrets } from './masking.js';
import type { ConfigSnapshot, ConfigStore } from './store.js';
import {
  canEditTraffic,
  isTrafficRoute,
  TRAFFIC_EDIT_ROLE,
  trafficEditRoutes,
  trafficUsageRoute,
  trafficWhatIfRoutes,
} from './traffic-routes.js';
import type { TrafficInForce } from './traffic-usage.js';
import { apiKeyOf, checkSize, findApi, objectBody, operatorGone, RequestError, routeKit, type RouteKit } from './route-kit.js';

const log = logger('configuration');

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

function publicSnapshot(snapshot: ConfigSnapshot): Record<string, unknown> {
  const { document, secrets } = withoutSecrets(snapshot.document);
  return { version: snapshot.meta, document, secrets, policies: snapshot.policies };
}

/**
 * The configuration API's router. Reading needs any role; changes need `admin`, those of traffic
 * control `operator` (and, with a session, its `X-CSRF-Token`). Every change is validated as the configuration file is (422 with
 * `issues`, each naming its field; a policy issue also its element and line), saved as a new
 * version, logged in the audit log, and in force only after ResetAllCaches or expiry. Compiling
 * policies, reading OpenAPI documents, what-ifs and diffs run in `work`'s worker threads.
 * `trafficInForce` is the traffic control the gateway runs (the usage of its policies).
 */
export function configurationRouter(
  access: OperatorAccess,
  store: ConfigStore,
  target: ConfigurationTarget,
  work: OperatorWorkPool,
  trafficInForce: () => TrafficInForce | undefined = () => undefined,
  /** What the gateway has beside the file (its Redis): a save that needs what it lacks is refused. */
  gateway: ProposalGateway = {},
): Router {
  const router = Router();
  router.use(pageHeaders);
  router.use(
    operatorGate(access, (req) =>
      req.method === 'GET' || req.method === 'HEAD'
        ? 'viewer'
        : req.path === '/policies/check'
          ? 'viewer'
          : isTrafficRoute(req.path)
            ? TRAFFIC_EDIT_ROLE
            : 'admin',
    ),
  );

  const kit = routeKit(access, store, work, gateway);
  readingRoutes(router, kit, store, target, work);
  changeRoutes(router, kit, store, work, target.store);
  policyRoutes(router, kit, access, store, target, work);
  trafficEditRoutes(router, kit);
  trafficWhatIfRoutes(router, kit, { access, store, transactions: target.store, work });
  trafficUsageRoute(router, kit, trafficInForce);
  return router;
}

/** The reading routes: the configuration, its versions and diffs, a policy, each node's state. */
function readingRoutes(router: Router, { read }: RouteKit, store: ConfigStore, target: ConfigurationTarget, work: OperatorWorkPool): void {
  // ---- reading -------------------------------------------------------------------------------

  router.get(
    '/config',
    read(async (req) => {
      const latest = await store.current();
      const operator = operatorOf(req)!;
      return {
        ...publicSnapshot(latest),
        source: store.label,
        role: operator.role,
        canEdit: operator.role === 'admin',
        canEditTraffic: canEditTraffic(operator.role),
      };
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

/**
 * The operations of an API imported from an OpenAPI document (read and merged in a worker). With
 * `whatIf` (`true` or `{ minutes?, limit? }`), the answer also tells which calls recorded over
 * the window the API's scope rules after the import would refuse (`scopeWhatIf`).
 */
function importRoute(router: Router, change: RouteKit['change'], work: OperatorWorkPool, transactions: TransactionStore): void {
  router.post(
    '/apis/:provider/:name/:version/operations/openapi',
    change('operations.import', async (latest, body, req, signal) => {
      const text = body['text'];
      if (typeof text !== 'string') throw new RequestError(400, 'text must be the OpenAPI document (JSON or YAML)');
      const mode = body['mode'] ?? 'merge';
      if (mode !== 'merge' && mode !== 'replace') throw new RequestError(400, 'mode must be merge or replace');
      const whatIf = scopeWhatIfAsked(body['whatIf']);
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
      const scopeWhatIf = whatIf === undefined ? undefined : await runScopeWhatIf(api, whatIf, transactions, work, signal);
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
        extra: {
          mode,
          changes,
          operations: read.operations.map(({ security: _security, ...op }) => op),
          skipped: read.skipped,
          ...(scopeWhatIf === undefined ? {} : { scopeWhatIf }),
        },
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

/** The window of an import's scope what-if, from the body's `whatIf`; `undefined` when not asked. */
function scopeWhatIfAsked(value: unknown): { minutes: number; limit: number; requestedLimit: number } | undefined {
  if (value === undefined || value === false) return undefined;
  const asked = value === true ? {} : value;
  if (asked === null || typeof asked !== 'object' || Array.isArray(asked))
    throw new RequestError(400, 'whatIf must be true or an object { minutes?, limit? }');
  const { minutes = SCOPE_WHAT_IF_MINUTES, limit = SCOPE_WHAT_IF_DEFAULT } = asked as Record<string, unknown>;
  if (!Number.isSafeInteger(minutes) || (minutes as number) < 1 || (minutes as number) > SCOPE_WHAT_IF_MAX_MINUTES)
    throw new RequestError(400, `whatIf.minutes must be a whole number from 1 to ${SCOPE_WHAT_IF_MAX_MINUTES}`);
  if (!Number.isSafeInteger(limit) || (limit as number) < 1)
    throw new RequestError(400, `whatIf.limit must be a whole number of transactions from 1 (at most ${SCOPE_WHAT_IF_MAX} are read)`);
  return { minutes: minutes as number, limit: Math.min(limit as number, SCOPE_WHAT_IF_MAX), requestedLimit: limit as number };
}

/** The calls of the window read here (the store is this thread's), checked against the API's scope rules after the import in a worker. */
async function runScopeWhatIf(
  api: ApiConfig,
  asked: { minutes: number; limit: number; requestedLimit: number },
  transactions: TransactionStore,
  work: OperatorWorkPool,
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  const to = Date.now();
  const window = { from: to - asked.minutes * 60_000, to };
  const read = await readScopeWhatIfRecords(transactions, window, asked.limit, apiKeyOf(api)).catch((err: unknown) => {
    log('scope what-if: the transaction store failed: %s', (err as Error)?.message ?? String(err));
    throw new RequestError(503, 'the recorded transactions could not be read');
  });
  const rules = {
    ...(api.requiredScopes === undefined ? {} : { requiredScopes: api.requiredScopes }),
    ...(api.scopeAlternatives === undefined ? {} : { scopeAlternatives: api.scopeAlternatives }),
  };
  const report = await work.run('scopeWhatIf', { api: rules, operations: api.operations, calls: read.calls }, signal);
  return {
    window: { minutes: asked.minutes, ...window },
    limit: asked.limit,
    ...(asked.requestedLimit !== asked.limit ? { requestedLimit: asked.requestedLimit } : {}),
    read: read.read,
    noToken: read.noToken,
    ...(read.truncated ? { truncated: true } : {}),
    ...report,
    summary: scopeWhatIfLine(asked.minutes, read, report),
  };
}

/** The changes of the document: the whole, APIs, operations (OpenAPI import too), token policies, a rollback. */
function changeRoutes(
  router: Router,
  { change }: RouteKit,
  store: ConfigStore,
  work: OperatorWorkPool,
  transactions: TransactionStore,
): void {
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
  importRoute(router, change, work, transactions);
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
        const answer = { ...(asked !== limit ? { requestedLimit: asked } : {}), file: az.policy, saved: false };
        const ran = await work.run(
          'whatIf',
          { draft: { text, references, file: az.policy, at: `${at}.policy` }, api: apiKeyOf(api), limit, read, answer },
          signal,
        );
        if ('issues' in ran) throw refused(ran.issues);
        await access.record(req, { action: 'policy.what-if', target: targetName, result: 'ok', status: 200, detail: ran.summary });
        // The worker's bytes as they are: no report is parsed or serialized on the APIs' thread.
        res
          .status(200)
          .type('application/json')
          .end(Buffer.from(ran.body.buffer, ran.body.byteOffset, ran.body.byteLength));
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

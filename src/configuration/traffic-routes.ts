/**
 * Traffic control in the configuration API: the top-level settings and the policies (at the top
 * and in each API) edited by operators and admins, each edit checked with the whole configuration
 * as the file is, saved as a version and audited like every change.
 *
 * @module
 */
import type { Request, Response, Router } from 'express';
import type { GatewayConfig } from '../config/types.js';
import type { TrafficPolicyDefinition as TrafficPolicyConfig } from '../traffic/types.js';
import { isGatewayError } from '../errors.js';
import { logger } from '../log.js';
import type { OperatorAccess } from '../operators/access.js';
import { BodyError, readJson } from '../operators/http.js';
import { roleAllows, type OperatorRole } from '../operators/roles.js';
import type { TransactionStore } from '../record/types.js';
import type { TrafficSimulation } from '../traffic/simulate.js';
import { apiKeyOf, findApi, objectBody, operatorGone, RequestError, type RouteKit } from './route-kit.js';
import type { ConfigStore } from './store.js';
import {
  factsNeeded,
  readTrafficWhatIfRecords,
  TRAFFIC_WHAT_IF_DEFAULT,
  TRAFFIC_WHAT_IF_MAX,
  TRAFFIC_WHAT_IF_MAX_MINUTES,
  TRAFFIC_WHAT_IF_MINUTES,
  type TrafficWhatIfRecords,
} from './traffic-what-if.js';
import { trafficUsage, USAGE_TOP_DEFAULT, USAGE_TOP_MAX, type TrafficInForce } from './traffic-usage.js';
import type { OperatorWorkPool } from './work/pool.js';
import { TRAFFIC_SETTINGS, withoutTrafficPolicy, withTrafficPolicy, withTrafficSettings, type PolicyPlace } from './traffic-changes.js';

const log = logger('configuration');

/** The role an edit of traffic control needs: operators tune limits during an incident, not only admins. */
export const TRAFFIC_EDIT_ROLE: OperatorRole = 'operator';

/** The routes of traffic control, below the configuration API. */
const TRAFFIC_PATH = /^\/(?:traffic\/|apis\/[^/]+\/[^/]+\/[^/]+\/traffic\/)/;

/** Whether a request of the configuration API is one of traffic control's (its role is {@link TRAFFIC_EDIT_ROLE}). */
export function isTrafficRoute(path: string): boolean {
  return TRAFFIC_PATH.test(path);
}

/** Whether a role may edit traffic control. */
export function canEditTraffic(role: OperatorRole): boolean {
  return roleAllows(role, TRAFFIC_EDIT_ROLE);
}

function policyOf(body: Record<string, unknown>, name: string): TrafficPolicyConfig {
  const policy = body['policy'];
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) throw new RequestError(400, 'policy must be an object');
  // A policy given without a name is the one the path names.
  const copy = structuredClone(policy) as Record<string, unknown>;
  if (copy['name'] === undefined) copy['name'] = name;
  return copy as unknown as TrafficPolicyConfig;
}

/** Where the path's policy list is: the API's own (`/apis/...`) or the top-level one. */
function placeOf(document: GatewayConfig, req: Request): PolicyPlace {
  return req.params['provider'] === undefined ? {} : { api: document.apis[findApi(document, req)]! };
}

function labelOf(place: PolicyPlace, name: string): string {
  return place.api === undefined ? `traffic policy ${name}` : `${apiKeyOf(place.api)} traffic policy ${name}`;
}

/** The edits: the settings, and a policy put or removed at the top or in an API. */
export function trafficEditRoutes(router: Router, { change }: RouteKit): void {
  router.put(
    '/traffic/settings',
    change('traffic.settings', (latest, body) => {
      const settings = body['settings'];
      if (settings === null || typeof settings !== 'object' || Array.isArray(settings))
        throw new RequestError(400, `settings must be an object of ${TRAFFIC_SETTINGS.join(', ')}`);
      if ('policies' in settings) throw new RequestError(400, 'settings hold no policies: put or remove them one by one');
      const document = structuredClone(latest.document);
      withTrafficSettings(document, settings as Record<string, unknown>);
      return { proposal: { document }, target: 'traffic control settings' };
    }),
  );
  const put = change('traffic.policy.save', (latest, body, req) => {
    const name = String(req.params['policy']);
    const document = structuredClone(latest.document);
    const place = placeOf(document, req);
    const policy = policyOf(body, name);
    const added = withTrafficPolicy(document, place, name, policy);
    return { proposal: { document }, target: labelOf(place, name), extra: { added } };
  });
  const remove = change('traffic.policy.remove', (latest, _body, req) => {
    const name = String(req.params['policy']);
    const document = structuredClone(latest.document);
    const place = placeOf(document, req);
    if (!withoutTrafficPolicy(document, place, name)) throw new RequestError(404, `no ${labelOf(place, name)}`);
    return { proposal: { document }, target: labelOf(place, name) };
  });
  router.put('/traffic/policies/:policy', put);
  router.delete('/traffic/policies/:policy', remove);
  router.put('/apis/:provider/:name/:version/traffic/policies/:policy', put);
  router.delete('/apis/:provider/:name/:version/traffic/policies/:policy', remove);
}

/** What the what-if route needs besides the kit. */
export interface TrafficWhatIfDeps {
  readonly access: OperatorAccess;
  readonly store: ConfigStore;
  /** Where transactions are recorded. */
  readonly transactions: TransactionStore;
  readonly work: OperatorWorkPool;
}

/** A whole number from `min` to `max`, or `fallback` when absent; else 400 with `what`. */
function wholeNumber(value: unknown, fallback: number, min: number, max: number, what: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) throw new RequestError(400, what);
  return value as number;
}

/** The audit log's line of a what-if. */
function whatIfLine(name: string, minutes: number, read: TrafficWhatIfRecords, simulation: TrafficSimulation): string {
  const top = simulation.groups[0];
  return (
    `draft ${name} over the ${read.read} transaction(s) of the last ${minutes} min${read.truncated ? ' (the newest; the window holds more)' : ''}: ` +
    `${simulation.refused} of ${simulation.covered} covered would be refused` +
    `${top === undefined ? '' : `, most in group ${top.group} (${top.refused})`}; nothing saved`
  );
}

/**
 * What-if of a draft policy, at the top (`POST /traffic/what-if`) or in an API
 * (`POST /apis/:provider/:name/:version/traffic/what-if`): `{ policy, minutes?, limit? }`. The
 * draft is put in place of the saved policy of its name (or added) and checked with the whole
 * configuration (422 with the issues at its path); the window's transactions are read here and
 * simulated in a worker. Nothing is saved; the run is audited.
 */
export function trafficWhatIfRoutes(router: Router, { fail, maxBody }: RouteKit, deps: TrafficWhatIfDeps): void {
  const route = (req: Request, res: Response): void => {
    let target = 'traffic what-if';
    const signal = operatorGone(res);
    readJson(req, res, maxBody)
      .then(async (raw) => {
        const body = objectBody(raw);
        const given = body['policy'];
        if (given === null || typeof given !== 'object' || Array.isArray(given)) throw new RequestError(400, 'policy must be an object');
        const policy = structuredClone(given) as TrafficPolicyConfig;
        const minutes = wholeNumber(
          body['minutes'],
          TRAFFIC_WHAT_IF_MINUTES,
          1,
          TRAFFIC_WHAT_IF_MAX_MINUTES,
          `minutes must be a whole number from 1 to ${TRAFFIC_WHAT_IF_MAX_MINUTES}`,
        );
        const asked = wholeNumber(
          body['limit'],
          TRAFFIC_WHAT_IF_DEFAULT,
          1,
          Number.MAX_SAFE_INTEGER,
          `limit must be a whole number of transactions from 1 (at most ${TRAFFIC_WHAT_IF_MAX} are read)`,
        );
        const limit = Math.min(asked, TRAFFIC_WHAT_IF_MAX);
        const document = structuredClone((await deps.store.current()).document);
        const apiIndex = req.params['provider'] === undefined ? undefined : findApi(document, req);
        const place: PolicyPlace = apiIndex === undefined ? {} : { api: document.apis[apiIndex]! };
        const name = typeof policy.name === 'string' ? policy.name : '';
        withTrafficPolicy(document, place, name, policy);
        const list = (place.api === undefined ? document.trafficControl?.policies : place.api.trafficControl?.policies) ?? [];
        const base = apiIndex === undefined ? 'trafficControl' : `apis[${apiIndex}].trafficControl`;
        const api = place.api === undefined ? undefined : apiKeyOf(place.api);
        target = `${api === undefined ? 'traffic policy' : `${api} traffic policy`} ${name} (draft)`;
        const to = Date.now();
        const window = { from: to - minutes * 60_000, to };
        // Read here (the store is this thread's); checked and simulated in a worker.
        const read = await readTrafficWhatIfRecords(deps.transactions, window, limit, api, factsNeeded(policy)).catch((err: unknown) => {
          log('traffic what-if: the transaction store failed: %s', (err as Error)?.message ?? String(err));
          throw new RequestError(503, 'the recorded transactions could not be read');
        });
        const draft = { document, at: `${base}.policies[${list.indexOf(policy)}]`, policy, api };
        const ran = await deps.work.run('trafficWhatIf', { draft, rows: read.rows }, signal);
        if ('issues' in ran)
          throw new RequestError(422, `${ran.issues.length} problem(s): ${ran.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, {
            issues: ran.issues,
          });
        const { simulation } = ran;
        await deps.access.record(req, {
          action: 'traffic.what-if',
          target,
          result: 'ok',
          status: 200,
          detail: whatIfLine(name, minutes, read, simulation),
        });
        res.status(200).json({
          scope: api ?? null,
          policy: name,
          at: draft.at,
          window: { minutes, ...window },
          limit,
          ...(asked !== limit ? { requestedLimit: asked } : {}),
          read: read.read,
          truncated: read.truncated,
          beforeTrafficControl: read.beforeTrafficControl,
          ...(read.oldest === undefined ? {} : { oldest: read.oldest, newest: read.newest }),
          covered: simulation.covered,
          refused: simulation.refused,
          groupCount: simulation.groupCount,
          groups: simulation.groups,
          saved: false,
        });
      })
      .catch(async (err: unknown) => {
        const code = err instanceof RequestError || err instanceof BodyError || isGatewayError(err) ? err.status : 500;
        await deps.access
          .record(req, {
            action: 'traffic.what-if',
            target,
            result: code >= 500 ? 'failed' : 'refused',
            status: code,
            detail: (err as Error)?.message?.slice(0, 500) ?? 'failed',
          })
          .catch(() => undefined);
        fail(res, err);
      });
  };
  router.post('/traffic/what-if', route);
  router.post('/apis/:provider/:name/:version/traffic/what-if', route);
}

/**
 * `GET /traffic/usage?top=<n>`: each policy in force and its busiest groups now (any role). With
 * `inForce` answering `undefined` (nothing loaded yet), no policy.
 */
export function trafficUsageRoute(router: Router, { read }: RouteKit, inForce: () => TrafficInForce | undefined): void {
  router.get(
    '/traffic/usage',
    read(async (req) => {
      const raw = req.query['top'];
      const top = raw === undefined ? USAGE_TOP_DEFAULT : typeof raw === 'string' && /^\d{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
      if (!(top >= 1 && top <= USAGE_TOP_MAX)) throw new RequestError(400, `top must be a whole number from 1 to ${USAGE_TOP_MAX}`);
      return trafficUsage(inForce(), top);
    }),
  );
}

/**
 * Traffic control in the configuration API: the top-level settings and the policies (at the top
 * and in each API) edited by operators and admins, each edit checked with the whole configuration
 * as the file is, saved as a version and audited like every change.
 *
 * @module
 */
import type { Request, Router } from 'express';
import type { GatewayConfig, TrafficPolicyConfig } from '../config/types.js';
import { roleAllows, type OperatorRole } from '../operators/roles.js';
import { apiKeyOf, findApi, RequestError, type RouteKit } from './route-kit.js';
import { TRAFFIC_SETTINGS, withoutTrafficPolicy, withTrafficPolicy, withTrafficSettings, type PolicyPlace } from './traffic-changes.js';

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

/**
 * The registry of client applications: who a caller is, beyond what its token says. A token names
 * a client id; the gateway's registry names the application behind it, the organization that
 * consumes the API through it, and its roles (as GovWay's registry of applications does), so that
 * `org:gateway:subject:client`, `org:gateway:subject:organization` and `org:gateway:subject:role`
 * carry them on every invocation.
 *
 * The rules of a valid registry are written once, here, as a list of issues: the factories turn
 * the first into an `InvalidOptionError`, the configuration validator reports them all.
 *
 * @module
 */
import { gatewayContext, type GatewayContext, type Middleware } from '../context.js';
import { optionChecks, optionKeys, type OptionChecks } from '../options.js';
import { tokenFacts } from '../token/facts.js';
import { issuePath, memberPath, type RuleIssue } from '../issues.js';
import type { XacmlSubjectInfo } from './request-builder.js';

/** One client application, registered under its client id. */
export interface ClientApplication {
  /** Application name (`org:gateway:subject:client`), for example `PetShopWeb`. */
  readonly name: string;
  /** Consuming organization (`org:gateway:subject:organization`), for example `ComuneDiPisa`. */
  readonly organization?: string;
  /**
   * Roles of the application (`org:gateway:subject:role`). When given, they are the client's
   * roles in place of the roles its token carries; when absent, the token's roles stay.
   */
  readonly roles?: readonly string[];
}

/** Client applications by client id (the token's `azp`, else `client_id`). */
export type ClientApplications = Readonly<Record<string, ClientApplication>>;

const APPLICATION_FIELDS = ['name', 'organization', 'roles'] as const;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function nonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

/**
 * The problems of a registry of client applications, every one of them (an empty list when it is
 * valid). Paths are relative to the registry: `client1.name`, `client1.roles[1]`.
 */
export function applicationIssues(value: unknown): RuleIssue[] {
  const issues: RuleIssue[] = [];
  if (!isObject(value)) return [{ path: '', message: 'must be an object mapping client ids to applications' }];
  for (const [clientId, application] of Object.entries(value)) {
    const base = memberPath('', clientId);
    if (clientId.trim() === '') issues.push({ path: base, message: 'a client id must be a non-empty string' });
    if (!isObject(application)) {
      issues.push({ path: base, message: 'must be an object { name, organization?, roles? }' });
      continue;
    }
    for (const key of Object.keys(application)) {
      if (!(APPLICATION_FIELDS as readonly string[]).includes(key))
        issues.push({ path: memberPath(base, key), message: `unknown field (allowed: ${APPLICATION_FIELDS.join(', ')})` });
    }
    if (application.name === undefined) issues.push({ path: memberPath(base, 'name'), message: 'is required' });
    else if (!nonEmptyString(application.name)) issues.push({ path: memberPath(base, 'name'), message: 'must be a non-empty string' });
    if (application.organization !== undefined && !nonEmptyString(application.organization)) {
      issues.push({ path: memberPath(base, 'organization'), message: 'must be a non-empty string' });
    }
    const roles = application.roles;
    if (roles !== undefined) {
      if (!Array.isArray(roles)) issues.push({ path: memberPath(base, 'roles'), message: 'must be an array of non-empty strings' });
      else
        roles.forEach((role: unknown, i) => {
          if (!nonEmptyString(role)) issues.push({ path: `${memberPath(base, 'roles')}[${i}]`, message: 'must be a non-empty string' });
        });
    }
  }
  return issues;
}

/**
 * A validated, immutable registry of client applications, looked up by client id. Built once (at
 * factory time or configuration load); a lookup is one `Map` read, and a client id such as
 * `__proto__` or `constructor` finds nothing it was not given.
 */
export class ApplicationRegistry {
  readonly #byClientId: ReadonlyMap<string, ClientApplication>;
  /** The subject attributes of each application, computed once (read on every request). */
  readonly #subjects: ReadonlyMap<string, XacmlSubjectInfo>;
  /** What `identifyApplication` puts on the request, computed once. */
  readonly #identities: ReadonlyMap<string, NonNullable<GatewayContext['application']>>;

  /**
   * @param applications - client applications by client id.
   * @throws `TypeError` naming the first bad field, when the registry is invalid.
   */
  constructor(applications: ClientApplications) {
    const first = applicationIssues(applications)[0];
    if (first !== undefined) throw new TypeError(`ApplicationRegistry: ${issuePath('applications', first.path)} ${first.message}`);
    this.#byClientId = copy(applications);
    const subjects = new Map<string, XacmlSubjectInfo>();
    for (const [clientId, application] of this.#byClientId) {
      subjects.set(
        clientId,
        Object.freeze({
          client: application.name,
          ...(application.organization === undefined ? {} : { organization: application.organization }),
          ...(application.roles === undefined ? {} : { roles: application.roles }),
        }),
      );
    }
    this.#subjects = subjects;
    this.#identities = new Map(
      [...this.#byClientId].map(([clientId, application]) => [clientId, Object.freeze({ clientId, ...application })]),
    );
  }

  /** Builds a registry through a factory's option checks (errors name `<factory>: options.<path>`).  @internal */
  static checked(applications: unknown, path: string, check: OptionChecks): ApplicationRegistry {
    if (applications instanceof ApplicationRegistry) return applications;
    const first = applicationIssues(applications)[0];
    if (first !== undefined) check.fail(issuePath(path, first.path), first.message);
    return new ApplicationRegistry(applications as ClientApplications);
  }

  /** The number of registered applications. */
  get size(): number {
    return this.#byClientId.size;
  }

  /** The application registered under `clientId`, if any. */
  get(clientId: string | undefined): ClientApplication | undefined {
    return clientId === undefined ? undefined : this.#byClientId.get(clientId);
  }

  /** The application registered under `clientId` with its client id, as `req.gateway.application` holds it. */
  identity(clientId: string | undefined): GatewayContext['application'] {
    return clientId === undefined ? undefined : this.#identities.get(clientId);
  }

  /**
   * The `org:gateway:subject:*` values of the application registered under `clientId` (client =
   * its name, organization, roles when registered), if any.
   */
  subject(clientId: string | undefined): XacmlSubjectInfo | undefined {
    return clientId === undefined ? undefined : this.#subjects.get(clientId);
  }
}

/** A frozen copy, so that changing the object given later changes nothing. */
function copy(applications: ClientApplications): ReadonlyMap<string, ClientApplication> {
  const map = new Map<string, ClientApplication>();
  for (const [clientId, application] of Object.entries(applications)) {
    map.set(
      clientId,
      Object.freeze({
        name: application.name,
        ...(application.organization === undefined ? {} : { organization: application.organization }),
        ...(application.roles === undefined ? {} : { roles: Object.freeze([...application.roles]) }),
      }),
    );
  }
  return map;
}

/** Options of {@link identifyApplication}. */
export interface IdentifyApplicationOptions {
  /** The registry: client id → `{ name, organization?, roles? }`, or an {@link ApplicationRegistry}. */
  applications: ClientApplications | ApplicationRegistry;
}

const IDENTIFY_APPLICATION_KEYS = optionKeys<IdentifyApplicationOptions>({ applications: true });

/**
 * Puts the registered application of the token's client (`azp`, else `client_id`) on the request,
 * as `req.gateway.application` (`clientId`, `name`, `organization`, `roles`), for the record's
 * sender section and any later middleware; a client that is not registered leaves it unset. Put it
 * after `introspect`. It never refuses a request: a policy (`xacmlAuthorize` with the same
 * registry) or `requireScopes` decides.
 *
 * @example
 * ```ts
 * app.use(requireToken({ policy }), introspect({ policy }), identifyApplication({ applications }));
 * ```
 */
export function identifyApplication(options: IdentifyApplicationOptions): Middleware {
  const check: OptionChecks = optionChecks('identifyApplication');
  check.object(options, '');
  check.known(options, '', IDENTIFY_APPLICATION_KEYS);
  if (options.applications === undefined) check.fail('applications', 'is required');
  const registry = ApplicationRegistry.checked(options.applications, 'applications', check);
  return function identifyApplicationMiddleware(req, _res, next): void {
    const context = gatewayContext(req);
    const identity = registry.identity(tokenFacts(context.token).clientId);
    if (identity === undefined) delete context.application;
    else context.application = identity;
    next();
  };
}

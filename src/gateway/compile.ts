/**
 * Compiling a resolved configuration into what serves requests: per API, the steps a request goes
 * through (docs/gateway.md, "What a request goes through") as middleware, built once per
 * configuration load (token policies reused while their settings stay the same, XACML policies
 * compiled here), so that the request path does no configuration work.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { Dispatcher } from 'undici';
import { ApplicationRegistry, identifyApplication } from '../authorize/applications.js';
import { unknownGatewayDesignators } from '../authorize/designators.js';
import { requireScopes, requiresSomething } from '../authorize/scopes.js';
import { requireUserAuthentication } from '../authorize/step-up.js';
import { xacmlAuthorize } from '../authorize/xacml-authorize/index.js';
import { forwardTokenHeaders } from '../token/forward/forward-token-headers.js';
import { introspect } from '../token/introspect.js';
import { clientCertificateSource } from '../token/binding/certificate.js';
import { createTokenPolicy, type TokenPolicy, type TokenPolicyObserver } from '../token/policy.js';
import type { TokenPolicyOptions } from '../token/policy-options.js';
import { requireToken } from '../token/require-token.js';
import { RedisReplayStore, type DpopReplayStore } from '../token/binding/replay.js';
import type { Middleware } from '../context.js';
import { ConfigError, type ConfigIssue } from '../config/errors.js';
import { tokenPolicyOptionsOf } from '../config/token-policy.js';
import type { ResolvedApi, ResolvedConfig, ResolvedTokenPolicy } from '../config/types.js';
import { observedRelay } from './relay.js';
import type { GatewayMetricsRecorder } from '../observability/metrics.js';
import { tracingTokenObserver, type GatewayTracing } from '../observability/tracing.js';
import { apiKey } from '../record/types.js';
import type { SharedTokenResults } from '../cluster/shared-token-results.js';
import type { TrustFunction } from '../trust-proxy.js';
import type { TrafficControlSection } from '../traffic/schema.js';
import type { GroupLabelKey } from '../traffic/group-key.js';
import { trafficSettings } from './traffic-settings.js';
import { runtimeTraffic, trafficSteps, type RuntimeTraffic, type TrafficEnvironment } from './traffic.js';
import { resourceMetadata, type ResourceMetadata } from './resource-metadata.js';
import type { RedisConnection } from '../cluster/redis.js';

/** One registered API, ready to serve. */
export interface CompiledApi {
  readonly api: ResolvedApi;
  /** Its steps, in the order they run. */
  readonly chain: readonly Middleware[];
  /** Its protected resource metadata (RFC 9728), when the API opts in. */
  readonly metadata?: ResourceMetadata | undefined;
}

/** What a configuration compiles into. */
export interface Runtime {
  /** Registered APIs by `provider/name/vN`. */
  readonly apis: ReadonlyMap<string, CompiledApi>;
  /** Token policies by their settings' key (reused across reloads while the settings are the same). */
  readonly tokenPolicies: ReadonlyMap<string, TokenPolicy>;
  /** Traffic control: the settings in force (the option's and the file's), the engine, the instance cap. */
  readonly traffic: RuntimeTraffic;
  /** What loads but is likely wrong, with its path (a designator the gateway never fills). */
  readonly warnings: readonly ConfigIssue[];
}

/** What every API's steps share, settled when the gateway is created. */
export interface CompileSettings {
  /** Connections to backends. */
  readonly dispatcher: Dispatcher;
  /** The `Server` header of relayed answers. */
  readonly server: string;
  /** Whose proxy headers are continued. */
  readonly trustProxy: TrustFunction;
  /** The client's address as `trustProxy` lets the gateway believe it (the invalid-token throttle's key). */
  readonly clientAddress: (req: IncomingMessage) => string | undefined;
  /** Relay client headers with `_` in their name. */
  readonly keepUnderscoreHeaders: boolean | undefined;
  /** Bytes of an unread upload drained after an early answer. */
  readonly maxDrainBytes: number | undefined;
  /** Token results shared with the other instances (Redis), when the gateway has them. */
  readonly shared?: SharedTokenResults | undefined;
  /** The gateway's Redis connection (traffic control's shared counts), once the cluster is joined. */
  readonly redis?: RedisConnection | undefined;
  /** The live instances the cluster last counted. */
  readonly liveInstances?: (() => number | undefined) | undefined;
  /** The host's hook adjusting each token policy's options. */
  readonly tokenPolicyOptions: ((options: TokenPolicyOptions, config: ResolvedTokenPolicy) => TokenPolicyOptions) | undefined;
  /** The gateway's spans (always: they cost nothing without an OpenTelemetry SDK). */
  readonly tracing: GatewayTracing;
  /** The gateway's metrics, unless `metrics: false`. */
  readonly metrics: GatewayMetricsRecorder | undefined;
  /** With a logger: the policy's observer, wrapped to log its authorization server's health. */
  readonly watchTokenPolicy?: ((policy: TokenPolicy, observer: TokenPolicyObserver) => TokenPolicyObserver) | undefined;
  /** `createGateway`'s `trafficControl` option, checked. */
  readonly trafficOption: TrafficControlSection | undefined;
  /** The key traffic groups' labels hash credentials under (the cluster secret's, else this process's). */
  readonly trafficLabelKey?: GroupLabelKey | undefined;
  /** Whether the gateway has Redis (a store `redis` needs it). */
  readonly hasRedis: boolean;
  /** `createGateway`'s `publicBaseUrl` (the file's wins). */
  readonly publicBaseUrl?: string | undefined;
  /** The base path of the APIs (normalized), for the protected resource metadata. Default `/`. */
  readonly basePath?: string | undefined;
  /** `createGateway`'s `dpopReplay`: where DPoP proof ids go without Redis. */
  readonly dpopReplay?: DpopReplayStore | undefined;
}

/** Compiling one API: where it is in the file, and the token policies known so far. */
interface ApiCompilation {
  readonly api: ResolvedApi;
  /** `apis[i]`, for error paths. */
  readonly at: string;
  readonly config: ResolvedConfig;
  readonly settings: CompileSettings;
  /** The configuration's client applications, checked once for every API. */
  readonly applications: ApplicationRegistry;
  /** Traffic control of the configuration, and what its engine needs. */
  readonly traffic: RuntimeTraffic;
  readonly trafficEnvironment: TrafficEnvironment;
  /** Where the steps note what loads but is likely wrong. */
  readonly warnings: ConfigIssue[];
  /** The token policy of the API's token management, once the token step found it. */
  tokenPolicy(name: string, options: [key: string, options: TokenPolicyOptions]): TokenPolicy;
}

/** A step: the middleware it adds to an API's chain (none when the API does not use it). */
type Step = (compilation: ApiCompilation) => readonly Middleware[];

/** Token management: 400 without a token, 401 for an invalid one. */
const tokenManagement: Step = ({ api, config, settings, tokenPolicy }) => {
  const tm = api.tokenManagement;
  if (!tm.enabled) return [];
  const policy = tokenPolicy(
    tm.policy,
    tokenPolicyOptionsFor(
      config.tokenPolicies[tm.policy]!,
      { ...api, tokenManagement: tm },
      settings.tokenPolicyOptions,
      config.listener.publicBaseUrl ?? settings.publicBaseUrl,
    ),
  );
  const { metrics, tracing } = settings;
  const observer = metrics?.tokenObserver(policy.name) ?? tracingTokenObserver(tracing, policy.name);
  policy.observe(settings.watchTokenPolicy?.(policy, observer) ?? observer);
  return [
    requireToken({ policy, clientAddress: settings.clientAddress }),
    tracing.step(
      'gateway token validation',
      introspect({
        policy,
        clientAddress: settings.clientAddress,
        clientCertificate: clientCertificateSource({ header: config.listener.clientCertificateHeader, trust: settings.trustProxy }),
      }),
    ),
  ];
};

/** Traffic control (docs/traffic-control.md): the policies covering the API, after token validation (they group by its facts). */
const trafficControl: Step = ({ api, at, traffic, trafficEnvironment }) => trafficSteps(traffic, api, at, trafficEnvironment);

/**
 * Who the caller is and what it may do without XACML: the registered client application
 * (`req.gateway.application`, for the record and XACML), then the API's and operation's step-up
 * rules (401 `insufficient_user_authentication`: the user authentication, before what the token
 * may do), then their required scopes and claims (403 `insufficient_scope`), on cached token
 * results too, before XACML.
 */
const callerRules: Step = ({ api, applications }) => {
  if (!api.tokenManagement.enabled) return [];
  const steps: Middleware[] = [identifyApplication({ applications })];
  const operations = api.operations ?? [];
  const anyStepUp = (rules: { requiredAcrValues?: readonly string[] | undefined; maxAuthenticationAge?: number | undefined }): boolean =>
    rules.requiredAcrValues !== undefined || rules.maxAuthenticationAge !== undefined;
  if (anyStepUp(api) || operations.some(anyStepUp)) {
    steps.push(
      requireUserAuthentication({
        ...(api.requiredAcrValues === undefined ? {} : { requiredAcrValues: api.requiredAcrValues }),
        ...(api.maxAuthenticationAge === undefined ? {} : { maxAuthenticationAge: api.maxAuthenticationAge }),
        operations: operations.filter(anyStepUp).map(({ name, requiredAcrValues, maxAuthenticationAge }) => ({
          name,
          ...(requiredAcrValues === undefined ? {} : { requiredAcrValues }),
          ...(maxAuthenticationAge === undefined ? {} : { maxAuthenticationAge }),
        })),
      }),
    );
  }
  if (requiresSomething(api) || operations.some((operation) => requiresSomething(operation))) {
    const rules = operations.map(({ name, requiredScopes, scopeAlternatives, requiredClaims }) => ({
      name,
      requiredScopes,
      scopeAlternatives,
      requiredClaims,
    }));
    steps.push(
      requireScopes({
        requiredScopes: api.requiredScopes,
        scopeAlternatives: api.scopeAlternatives,
        requiredClaims: api.requiredClaims,
        operations: rules,
      }),
    );
  }
  return steps;
};

/** Authorization `xacml-Policy` (403 unless Permit), compiled here: the request path does no XML work. */
const authorization: Step = ({ api, at, applications, settings, warnings }) => {
  const az = api.authorization;
  if (az.mode !== 'xacml-Policy') return [];
  for (const [i, xml] of [az.policyXml, ...az.referencesXml].entries())
    for (const { attributeId, nearest } of unknownGatewayDesignators(xml))
      warnings.push({
        path: `${at}.authorization.${i === 0 ? 'policy' : `references[${i - 1}]`}`,
        message: `designator ${attributeId} names no attribute the gateway puts in its requests (nearest: ${nearest}); it never matches`,
      });
  try {
    const authorize = xacmlAuthorize<IncomingMessage>({
      xacmlPolicy: az.policyXml,
      references: az.referencesXml,
      applications,
      recordRequests: api.recording.xacmlRequests,
    });
    return [
      settings.tracing.step('gateway xacml evaluation', authorize, (span, context) => {
        if (context.authorization !== undefined) span.setAttribute('gateway.xacml.decision', context.authorization.decision);
      }),
    ];
  } catch (err) {
    throw new ConfigError([{ path: `${at}.authorization.policy`, message: `${az.policyFile}: ${(err as Error).message}` }], undefined, {
      cause: err,
    });
  }
};

/** Token Forward (docs/forwarding.md); the client's token and spoofed gateway headers go in every case. */
const tokenForward: Step = ({ api }) => {
  const tm = api.tokenManagement;
  const forward = tm.enabled && tm.tokenForward.enabled;
  const original = tm.enabled ? tm.tokenForward.originalToken : undefined;
  return [
    forwardTokenHeaders({
      mode: forward ? (tm.tokenForward.mode ?? 'headers') : [],
      ...(original === undefined ? {} : { originalToken: original }),
      // The relay writes (and records) the transaction id for the backend.
      transactionIdHeader: false,
    }),
  ];
};

/** The relay to the API's backend (docs/gateway.md, "The relay"). */
const relay: Step = ({ api, config, settings }) => {
  const prefix = `/${apiKey(api)}`;
  const certificateHeader = config.listener.clientCertificateHeader;
  return [
    observedRelay(
      {
        target: api.backend.url,
        dispatcher: settings.dispatcher,
        timeoutMs: api.backend.timeoutMs,
        server: settings.server,
        trustProxy: settings.trustProxy,
        ...(certificateHeader === undefined ? {} : { dropHeaders: [certificateHeader] }),
        ...(settings.keepUnderscoreHeaders === undefined ? {} : { keepUnderscoreHeaders: settings.keepUnderscoreHeaders }),
        ...(settings.maxDrainBytes === undefined ? {} : { maxDrainBytes: settings.maxDrainBytes }),
        resourceUrl: (req) => {
          // req.url is the canonical target below the base path, as routing left it.
          const url = req.url ?? '/';
          if (url.startsWith(prefix)) {
            const rest = url.slice(prefix.length);
            return rest === '' || rest.startsWith('?') ? `/${rest}` : rest;
          }
          // Something rewrote req.url: fall back to what routing saw (query from the current URL).
          const q = url.indexOf('?');
          return (req.gateway?.api?.resourcePath ?? '/') + (q === -1 ? '' : url.slice(q));
        },
      },
      { tracing: settings.tracing, backend: settings.metrics?.backendObserver(apiKey(api)) },
    ),
  ];
};

/** The steps, in the order they run, by name. */
export const STEPS: ReadonlyArray<readonly [name: string, step: Step]> = [
  ['token management', tokenManagement],
  ['traffic control', trafficControl],
  ['caller rules', callerRules],
  ['authorization', authorization],
  ['token forward', tokenForward],
  ['relay', relay],
];

/**
 * The options of the token policy of an API: the file's settings plus the API's switches. Returns
 * the key under which an equal policy is reused across reloads (computed before the host's hook,
 * which may add values that do not serialize) and the options to create it with.
 */
export function tokenPolicyOptionsFor(
  config: ResolvedTokenPolicy,
  api: ResolvedApi & { tokenManagement: { enabled: true } },
  adjust?: (options: TokenPolicyOptions, config: ResolvedTokenPolicy) => TokenPolicyOptions,
  publicBaseUrl?: string,
): [key: string, options: TokenPolicyOptions] {
  const { jwtValidation, introspection, userInfo } = api.tokenManagement;
  let policyOptions = tokenPolicyOptionsOf(config.name, config, { introspection, jwtValidation, userInfo });
  // The gateway's public origin, for DPoP proofs (only a policy with DPoP on reads it).
  if (publicBaseUrl !== undefined && config.dpop !== undefined && config.dpop !== 'off')
    policyOptions = { ...policyOptions, publicBaseUrl };
  // Same settings, same policy object: a reload keeps discovery state; the key is never logged.
  const key = JSON.stringify(policyOptions);
  if (adjust !== undefined) policyOptions = adjust(policyOptions, config);
  return [key, policyOptions];
}

/** A policy's options with what the gateway shares between instances: token results, and DPoP proof ids on Redis. */
function withGatewayStores(options: TokenPolicyOptions, settings: CompileSettings): TokenPolicyOptions {
  const out = settings.shared === undefined ? options : { ...options, shared: settings.shared };
  if (out.dpop === undefined || out.dpop === 'off' || out.dpopReplay !== undefined) return out;
  if (settings.redis !== undefined) return { ...out, dpopReplay: new RedisReplayStore(settings.redis) };
  if (settings.dpopReplay !== undefined) return { ...out, dpopReplay: settings.dpopReplay };
  return out;
}

/**
 * Compiles a configuration. Token policies of `previous` whose settings did not change are reused;
 * on any error the policies created here are closed and the error (a {@link ConfigError} naming the
 * field) is thrown, leaving `previous` in force.
 */
export function compileRuntime(config: ResolvedConfig, previous: Runtime | undefined, settings: CompileSettings): Runtime {
  const { metrics } = settings;
  const trafficEnvironment: TrafficEnvironment = {
    redis: settings.redis,
    liveInstances: settings.liveInstances ?? (() => undefined),
    onPolicyResult: metrics === undefined ? undefined : (api, policy, result) => metrics.trafficDecided(api, policy, result),
    clientAddress: settings.clientAddress,
    labelKey: settings.trafficLabelKey,
  };
  const { traffic, created: createdLimiter } = runtimeTraffic(
    trafficSettings(config, settings.trafficOption, settings.hasRedis),
    config.apis,
    previous?.traffic,
    trafficEnvironment,
  );
  const known = previous?.tokenPolicies ?? new Map<string, TokenPolicy>();
  const tokenPolicies = new Map<string, TokenPolicy>();
  const created: TokenPolicy[] = [];
  const apis = new Map<string, CompiledApi>();
  const tokenPolicy = (name: string, [key, options]: [string, TokenPolicyOptions]): TokenPolicy => {
    let policy = tokenPolicies.get(key) ?? known.get(key);
    if (policy === undefined) {
      try {
        policy = createTokenPolicy(withGatewayStores(options, settings));
      } catch (err) {
        const message = (err as Error).message;
        // The file's policy gets its publicBaseUrl from the gateway: say where to give it.
        const missing = /options\.publicBaseUrl is required/.test(message)
          ? `dpop needs publicBaseUrl at the top of the configuration (or createGateway's publicBaseUrl)`
          : message;
        throw new ConfigError([{ path: `tokenPolicies.${name}`, message: missing }], undefined, { cause: err });
      }
      created.push(policy);
    }
    tokenPolicies.set(key, policy);
    return policy;
  };
  const applications = new ApplicationRegistry(config.applications);
  const warnings: ConfigIssue[] = [];
  try {
    config.apis.forEach((api, i) => {
      const at = `apis[${i}]`;
      let used: { policy: TokenPolicy; options: TokenPolicyOptions } | undefined;
      const compilation: ApiCompilation = {
        api,
        at,
        config,
        settings,
        applications,
        tokenPolicy: (name, entry) => {
          const policy = tokenPolicy(name, entry);
          used = { policy, options: entry[1] };
          return policy;
        },
        warnings,
        traffic,
        trafficEnvironment,
      };
      const chain = STEPS.flatMap(([, step]) => step(compilation));
      // The resolved configuration allows the metadata only with token management (so a policy).
      const metadata =
        api.protectedResourceMetadata && used !== undefined
          ? resourceMetadata(api, at, used, config.listener.publicBaseUrl ?? settings.publicBaseUrl, settings.basePath ?? '/', {
              header: config.listener.clientCertificateHeader,
              trust: settings.trustProxy,
            })
          : undefined;
      apis.set(apiKey(api), { api, chain, metadata });
    });
  } catch (err) {
    for (const policy of created) policy.close();
    void createdLimiter?.close();
    throw err;
  }
  return { apis, tokenPolicies, traffic, warnings };
}

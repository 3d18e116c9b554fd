/**
 * Step-up authentication (RFC 9470): an API (or one of its operations) requires of the user
 * authentication behind the token a level (`acr`, one of `requiredAcrValues`) and a freshness
 * (`auth_time` at most `maxAuthenticationAge` seconds ago). A valid token that falls short is
 * refused with 401 `insufficient_user_authentication`, whose challenge names what is required
 * (`acr_values`, `max_age`) so that the client can send the user back to the authorization server
 * for a new token. Checked after token validation, before the scope rules and XACML.
 *
 * The rules of a valid rule set are written once, here, as a list of issues:
 * `requireUserAuthentication` turns the first into an `InvalidOptionError`, the configuration
 * validator reports them all.
 *
 * @module
 */
import { gatewayContext, type Middleware, type TokenContext } from '../context.js';
import { GatewayError, type DpopChallenge } from '../errors.js';
import { logger } from '../log.js';
import { optionChecks, optionKeys, type OptionChecks } from '../options.js';
import { validatingPolicy } from '../token/validated-by.js';
import { issuePath, type RuleIssue } from '../issues.js';
import { ACR_VALUE_MESSAGE, isRuleScope, MAX_RULE_SCOPES } from './scopes.js';

const log = logger('authorize');

/** The largest `maxAuthenticationAge` accepted: one year, in seconds. */
export const MAX_AUTHENTICATION_AGE_LIMIT = 31_536_000;

/** What the user authentication behind a token must be to invoke an API or one of its operations. */
export interface StepUpRules {
  /**
   * Authentication context class references (`acr` values, for example
   * `["urn:mace:incommon:iap:silver"]`), one of which the token's `acr` claim must be; in the order
   * of preference the challenge's `acr_values` gives them. Non-empty, each value once.
   */
  readonly requiredAcrValues?: readonly string[];
  /**
   * The most seconds since the user last authenticated: the token's `auth_time` claim must be
   * present and `now - auth_time` at most this (plus the token policy's `clockSkew`). A positive
   * integer, at most 31,536,000 (one year).
   */
  readonly maxAuthenticationAge?: number;
}

/** The step-up rules of one operation, by its name (the configuration's `operations[].name`). */
export interface OperationStepUpRules extends StepUpRules {
  /** The operation's name, as `req.gateway.api.operation` holds it. */
  readonly name: string;
}

/** Options of {@link requireUserAuthentication}. */
export interface RequireUserAuthenticationOptions extends StepUpRules {
  /**
   * Rules of single operations, stricter than the API's: an operation's `requiredAcrValues`
   * **replaces** the API's for its requests (it names the levels the operation accepts), and the
   * smaller of the two `maxAuthenticationAge` applies. The operation is the one routing stored in
   * `req.gateway.api.operation`; a request of an operation not listed needs only the API's rules.
   */
  readonly operations?: readonly OperationStepUpRules[];
}

/**
 * The 401 of a token whose user authentication is not the one required (RFC 9470 section 3): its
 * challenge says `error="insufficient_user_authentication"` and names what is required.
 */
export class InsufficientUserAuthenticationError extends GatewayError {
  /** The acr values required, space-separated, for the challenge's `acr_values`; `undefined` when none is. */
  readonly acrValues: string | undefined;
  /** The maximum authentication age in seconds, for the challenge's `max_age`; `undefined` when none is. */
  readonly maxAge: number | undefined;
  /** The challenge's `error_description`: what fell short, in the words of RFC 9470's examples. */
  readonly challengeDescription: string;

  constructor(
    required: { readonly acrValues?: string | undefined; readonly maxAge?: number | undefined },
    options: { realm?: string | undefined; diagnostic: string; description: string; dpop?: DpopChallenge | undefined },
  ) {
    super('ERR_INSUFFICIENT_USER_AUTHENTICATION', {
      ...(options.realm === undefined ? {} : { realm: options.realm }),
      ...(options.dpop === undefined ? {} : { dpop: options.dpop }),
      diagnostic: options.diagnostic,
    });
    this.acrValues = required.acrValues;
    this.maxAge = required.maxAge;
    this.challengeDescription = options.description;
  }
}

/** The `error_description` of each shortfall (RFC 9470 section 3's examples). */
const DESCRIPTIONS = {
  acr: 'A different authentication level is required',
  age: 'More recent authentication is required',
  both: 'A different authentication level and a more recent authentication are required',
} as const;

/**
 * The problems of a step-up rule set (`requiredAcrValues`, `maxAuthenticationAge`), every one of
 * them; paths are relative to the object that holds the two keys (`requiredAcrValues[1]`).
 */
export function stepUpRuleIssues(rules: { readonly requiredAcrValues?: unknown; readonly maxAuthenticationAge?: unknown }): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const values = rules.requiredAcrValues;
  if (values !== undefined) {
    if (!Array.isArray(values) || values.length === 0 || values.length > MAX_RULE_SCOPES)
      issues.push({ path: 'requiredAcrValues', message: `must be a non-empty array of at most ${MAX_RULE_SCOPES} acr values` });
    else {
      const first = new Map<string, number>();
      values.forEach((value: unknown, i) => {
        const at = `requiredAcrValues[${i}]`;
        if (!isRuleScope(value)) {
          issues.push({ path: at, message: ACR_VALUE_MESSAGE });
          return;
        }
        const seen = first.get(value);
        if (seen !== undefined) issues.push({ path: at, message: `duplicates requiredAcrValues[${seen}]` });
        else first.set(value, i);
      });
    }
  }
  const age = rules.maxAuthenticationAge;
  if (age !== undefined && (typeof age !== 'number' || !Number.isInteger(age) || age <= 0 || age > MAX_AUTHENTICATION_AGE_LIMIT)) {
    issues.push({
      path: 'maxAuthenticationAge',
      message: `must be a whole number of seconds from 1 to ${MAX_AUTHENTICATION_AGE_LIMIT} (one year)`,
    });
  }
  return issues;
}

/**
 * The problems of a list of operations' step-up rules beside each one's own: an operation name
 * given step-up rules twice (which would leave it unclear which apply). Paths are relative to the
 * list's holder (`operations[2]`).
 */
export function stepUpOperationIssues(operations: readonly unknown[]): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const first = new Map<string, number>();
  operations.forEach((operation, i) => {
    if (operation === null || typeof operation !== 'object') return;
    const { name, requiredAcrValues, maxAuthenticationAge } = operation as {
      name?: unknown;
      requiredAcrValues?: unknown;
      maxAuthenticationAge?: unknown;
    };
    if (typeof name !== 'string' || (requiredAcrValues === undefined && maxAuthenticationAge === undefined)) return;
    const seen = first.get(name);
    if (seen !== undefined)
      issues.push({ path: `operations[${i}]`, message: `operations[${seen}] of the same name already has step-up rules: give them once` });
    else first.set(name, i);
  });
  return issues;
}

/** Whether a rule set requires anything. */
function anyStepUpRule(rules: StepUpRules): boolean {
  return rules.requiredAcrValues !== undefined || rules.maxAuthenticationAge !== undefined;
}

const REQUIRE_KEYS = optionKeys<RequireUserAuthenticationOptions>({
  requiredAcrValues: true,
  maxAuthenticationAge: true,
  operations: true,
});
const OPERATION_KEYS = optionKeys<OperationStepUpRules>({ name: true, requiredAcrValues: true, maxAuthenticationAge: true });

/** A rule ready to check. */
interface CompiledStepUp {
  /** The acr values accepted, or `undefined` when any (or none) is. */
  readonly acr: ReadonlySet<string> | undefined;
  /** `acr_values` of the challenge: the values, space-separated. */
  readonly acrValues: string | undefined;
  readonly maxAge: number | undefined;
}

/** The rule of the API (`operation` undefined) or of an operation, stricter than the API's. */
function compile(api: StepUpRules, operation?: StepUpRules): CompiledStepUp | undefined {
  const values = operation?.requiredAcrValues ?? api.requiredAcrValues;
  const ages = [api.maxAuthenticationAge, operation?.maxAuthenticationAge].filter((age): age is number => age !== undefined);
  const maxAge = ages.length === 0 ? undefined : Math.min(...ages);
  if (values === undefined && maxAge === undefined) return undefined;
  return { acr: values === undefined ? undefined : new Set(values), acrValues: values?.join(' '), maxAge };
}

function checkRules(check: OptionChecks, rules: StepUpRules, path: string): void {
  const first = stepUpRuleIssues(rules)[0];
  if (first !== undefined) check.fail(issuePath(path, first.path), first.message);
}

/**
 * Step-up authentication (RFC 9470) of an API and its operations. Each request's validated token
 * must carry an `acr` claim that is one of `requiredAcrValues`, and an `auth_time` claim at most
 * `maxAuthenticationAge` seconds old (the token policy's `clockSkew` tolerated; without `introspect`
 * before it, none); both are read from the validated JWT, else from the introspection answer (never
 * from UserInfo). Otherwise the answer is 401 `ERR_INSUFFICIENT_USER_AUTHENTICATION`
 * (`protocol:GATEWAY-1374`, outcome `INSUFFICIENT_USER_AUTHENTICATION`) with
 * `WWW-Authenticate: Bearer realm="<token policy>", error="insufficient_user_authentication", error_description="…", acr_values="<values>", max_age="<seconds>"`:
 * `acr_values` and `max_age` name every requirement of the rule that applies (not only the one
 * missed), so that one new authentication meets them all. Under a token policy with DPoP on the
 * challenge is the policy's DPoP one, as for its other 401s; an API with protected resource
 * metadata adds `resource_metadata`. The diagnostic says what fell short (the token's `acr`, its
 * authentication's age).
 *
 * Put it after `introspect` (it reads `req.gateway.token`, cached results included) and before
 * `requireScopes` and `xacmlAuthorize`. Without a validated token it fails closed (500
 * `ERR_INTERNAL`: the chain is misassembled). Options without any rule, or with a key it does not
 * know, throw an `InvalidOptionError` at creation.
 *
 * @example
 * ```ts
 * import { introspect, requireToken, requireUserAuthentication } from 'express-access-gateway';
 *
 * app.use(
 *   '/gateway/Ente/Payments/v1',
 *   requireToken({ policy }), introspect({ policy }),
 *   requireUserAuthentication({
 *     requiredAcrValues: ['urn:mace:incommon:iap:silver', 'urn:mace:incommon:iap:gold'],
 *     operations: [{ name: 'transfer', requiredAcrValues: ['urn:mace:incommon:iap:gold'], maxAuthenticationAge: 300 }],
 *   }),
 * );
 * ```
 */
export function requireUserAuthentication(options: RequireUserAuthenticationOptions): Middleware {
  const check: OptionChecks = optionChecks('requireUserAuthentication');
  check.object(options, '');
  check.known(options, '', REQUIRE_KEYS);
  checkRules(check, options, '');
  const operations = options.operations ?? [];
  if (!Array.isArray(operations)) check.fail('operations', 'must be an array of { name, requiredAcrValues?, maxAuthenticationAge? }');
  operations.forEach((operation, i) => {
    check.object(operation, `operations[${i}]`);
    check.known(operation, `operations[${i}]`, OPERATION_KEYS);
    check.string(operation.name, `operations[${i}].name`);
    checkRules(check, operation, `operations[${i}]`);
  });
  const twice = stepUpOperationIssues(operations)[0];
  if (twice !== undefined) check.fail(twice.path, twice.message);
  if (!anyStepUpRule(options) && !operations.some(anyStepUpRule)) {
    check.fail(
      '',
      'require nothing: give requiredAcrValues, maxAuthenticationAge or operations[].requiredAcrValues/maxAuthenticationAge (a rule set without a rule would let every token through)',
    );
  }

  // Everything a request needs, decided now: the API's rule, and each operation's merged with it.
  const apiRule = compile(options);
  const operationRules = new Map<string, CompiledStepUp | undefined>(
    operations.filter(anyStepUpRule).map((operation) => [operation.name, compile(options, operation)]),
  );

  return function requireUserAuthenticationMiddleware(req, _res, next): void {
    const context = gatewayContext(req);
    const token = context.token;
    if (token === undefined || (token.info === undefined && token.introspection === undefined && token.jwt === undefined)) {
      next(
        new GatewayError('ERR_INTERNAL', {
          diagnostic: 'requireUserAuthentication: no validated token on the request (put it after introspect)',
        }),
      );
      return;
    }
    const operation = context.api?.operation;
    const rule = operation !== undefined && operationRules.has(operation) ? operationRules.get(operation) : apiRule;
    if (rule === undefined) {
      next();
      return;
    }
    const policy = validatingPolicy(token);
    const found = shortfall(rule, token, Date.now() / 1000, policy?.clockTolerance ?? 0);
    if (found === undefined) {
      next();
      return;
    }
    log('insufficient user authentication: %s', found.diagnostic);
    next(
      new InsufficientUserAuthenticationError(
        { acrValues: rule.acrValues, maxAge: rule.maxAge },
        {
          realm: token.policy,
          dpop: policy?.dpopChallenge(req),
          description: DESCRIPTIONS[found.kind],
          diagnostic: `the user authentication behind the token is not the one the API requires: ${found.diagnostic}`,
        },
      ),
    );
  };
}

/** The claim `name` of the token: the validated JWT's, else the introspection answer's. */
function claimOf(token: TokenContext, name: string): unknown {
  if (token.jwt !== undefined && Object.hasOwn(token.jwt, name)) return token.jwt[name];
  if (token.introspection !== undefined && Object.hasOwn(token.introspection, name)) return token.introspection[name];
  return undefined;
}

/** What the token lacks of `rule`, and in which respect; `undefined` when it meets it. */
function shortfall(
  rule: CompiledStepUp,
  token: TokenContext,
  now: number,
  tolerance: number,
): { kind: keyof typeof DESCRIPTIONS; diagnostic: string } | undefined {
  const missed: string[] = [];
  let acrMissed = false;
  let ageMissed = false;
  if (rule.acr !== undefined) {
    const acr = claimOf(token, 'acr');
    if (typeof acr !== 'string' || !rule.acr.has(acr)) {
      acrMissed = true;
      missed.push(typeof acr === 'string' ? `acr ${JSON.stringify(acr)} is not one of ${rule.acrValues ?? ''}` : 'no acr claim');
    }
  }
  if (rule.maxAge !== undefined) {
    const authTime = claimOf(token, 'auth_time');
    if (typeof authTime !== 'number' || !Number.isFinite(authTime)) {
      ageMissed = true;
      missed.push('no auth_time claim');
    } else if (authTime - tolerance > now) {
      ageMissed = true;
      missed.push('auth_time is in the future');
    } else if (now - authTime > rule.maxAge + tolerance) {
      ageMissed = true;
      missed.push(`authenticated ${Math.floor(now - authTime)} s ago, more than the ${rule.maxAge} s allowed`);
    }
  }
  if (!acrMissed && !ageMissed) return undefined;
  return { kind: acrMissed && ageMissed ? 'both' : acrMissed ? 'acr' : 'age', diagnostic: missed.join(', ') };
}

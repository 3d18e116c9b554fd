/**
 * Scope and claim rules without XACML: an API (or one of its operations) requires scopes of the
 * token, or values of its claims. A token that falls short is refused with 403
 * `insufficient_scope` (RFC 6750 section 3.1), before any XACML policy is evaluated.
 *
 * The rules of a valid rule set are written once, here, as a list of issues: `requireScopes`
 * turns the first into an `InvalidOptionError`, the configuration validator reports them all.
 *
 * @module
 */
import { gatewayContext, type Middleware, type TokenContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import { optionChecks, optionKeys, type OptionChecks } from '../options.js';
import { tokenFacts } from '../token/facts.js';
import { issuePath, memberPath, type RuleIssue } from '../issues.js';

const log = logger('authorize');

/** Claim name → the values it may hold; a claim holding any one of them passes. */
export type RequiredClaims = Readonly<Record<string, readonly string[]>>;

/** What a token must carry to invoke an API or one of its operations. */
export interface ScopeRules {
  /** Scopes the token's `scope` must all hold, for example `["pets:read"]`. */
  readonly requiredScopes?: readonly string[];
  /**
   * Claims the token must hold, each with at least one of the listed values, for example
   * `{ "tenant": ["acme"], "realm_access.roles": ["clerk", "manager"] }`. A claim is read from the
   * validated JWT, then from the introspection answer; a name with dots that is not a claim of its
   * own reads nested members (`realm_access.roles`). An array claim holds each of its items; a
   * number or boolean is compared as its JSON text (`42`, `true`).
   */
  readonly requiredClaims?: RequiredClaims;
}

/** The rules of one operation, by its name (the configuration's `operations[].name`). */
export interface OperationScopeRules extends ScopeRules {
  /** The operation's name, as `req.gateway.api.operation` holds it. */
  readonly name: string;
}

/** Options of {@link requireScopes}. */
export interface RequireScopesOptions extends ScopeRules {
  /**
   * Rules of single operations, checked **in addition to** the API's: an operation requiring
   * `pets:write` of an API requiring `pets:read` needs both. The operation is the one routing
   * stored in `req.gateway.api.operation`; a request of an operation not listed needs only the
   * API's rules. Operations without rules may be listed; an operation holds no other key.
   */
  readonly operations?: readonly OperationScopeRules[];
}

/** The 403 of a token without the scopes or claims required: its challenge names the scopes. */
export class InsufficientScopeError extends GatewayError {
  /**
   * The scopes the API (and operation) require, space-separated, for the challenge's `scope`
   * parameter (RFC 6750 section 3); `undefined` when only claims are required.
   */
  readonly scope: string | undefined;

  constructor(scope: string | undefined, options: { realm?: string; diagnostic: string }) {
    super('ERR_INSUFFICIENT_SCOPE', { ...(options.realm === undefined ? {} : { realm: options.realm }), diagnostic: options.diagnostic });
    this.scope = scope;
  }
}

/** RFC 6749 section 3.3 `scope-token`: printable ASCII but space, `"` and `\`. */
export const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * The problems of a rule set (`requiredScopes`, `requiredClaims`), every one of them; paths are
 * relative to the object that holds the two keys (`requiredScopes[1]`, `requiredClaims.tenant`).
 */
export function scopeRuleIssues(rules: { readonly requiredScopes?: unknown; readonly requiredClaims?: unknown }): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const scopes = rules.requiredScopes;
  if (scopes !== undefined) {
    if (!Array.isArray(scopes)) issues.push({ path: 'requiredScopes', message: 'must be an array of scopes' });
    else
      scopes.forEach((scope: unknown, i) => {
        if (typeof scope !== 'string' || !SCOPE_TOKEN.test(scope)) {
          issues.push({ path: `requiredScopes[${i}]`, message: 'must be a scope: printable ASCII characters, no space, " or \\' });
        }
      });
  }
  const claims = rules.requiredClaims;
  if (claims !== undefined) {
    if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) {
      issues.push({ path: 'requiredClaims', message: 'must be an object mapping claim names to arrays of allowed values' });
    } else {
      for (const [name, values] of Object.entries(claims)) {
        const at = memberPath('requiredClaims', name);
        if (name === '' || name.startsWith('.') || name.endsWith('.') || name.includes('..'))
          issues.push({ path: at, message: 'a claim name must be non-empty, dot-separated names' });
        if (!Array.isArray(values) || values.length === 0)
          issues.push({ path: at, message: 'must be a non-empty array of allowed values (strings)' });
        else
          values.forEach((value: unknown, i) => {
            if (typeof value !== 'string') issues.push({ path: `${at}[${i}]`, message: 'must be a string' });
          });
      }
    }
  }
  return issues;
}

const REQUIRE_SCOPES_KEYS = optionKeys<RequireScopesOptions>({ requiredScopes: true, requiredClaims: true, operations: true });
const OPERATION_RULE_KEYS = optionKeys<OperationScopeRules>({ name: true, requiredScopes: true, requiredClaims: true });

/** A rule set ready to check: the scopes to find, the claims with their allowed values. */
interface CompiledRule {
  readonly scopes: readonly string[];
  /** Space-separated scopes of the challenge, or `undefined` without any. */
  readonly challenge: string | undefined;
  readonly claims: ReadonlyArray<{
    readonly name: string;
    readonly path: readonly string[] | undefined;
    readonly allowed: ReadonlySet<string>;
  }>;
}

function compile(...sets: ScopeRules[]): CompiledRule {
  const scopes = [...new Set(sets.flatMap((set) => set.requiredScopes ?? []))];
  const claims: Array<CompiledRule['claims'][number]> = [];
  for (const set of sets) {
    for (const [name, values] of Object.entries(set.requiredClaims ?? {})) {
      claims.push({ name, path: name.includes('.') ? name.split('.') : undefined, allowed: new Set(values) });
    }
  }
  return { scopes, challenge: scopes.length === 0 ? undefined : scopes.join(' '), claims };
}

function checkRules(check: OptionChecks, rules: ScopeRules, path: string): void {
  const first = scopeRuleIssues(rules)[0];
  if (first !== undefined) check.fail(issuePath(path, first.path), first.message);
}

/**
 * Scope and claim rules of an API and its operations, without XACML. Each request's validated
 * token must hold every required scope (in its `scope`) and, for every required claim, one of the
 * allowed values; otherwise the answer is 403 `ERR_INSUFFICIENT_SCOPE` (`protocol:GATEWAY-1368`,
 * outcome `INSUFFICIENT_SCOPE`) with
 * `WWW-Authenticate: Bearer realm="<token policy>", error="insufficient_scope", scope="<required scopes>", error_description="…"`.
 * The diagnostic names what was missing (scope names, claim names; never claim values).
 *
 * Put it after `introspect` (it reads `req.gateway.token`, cached results included) and before
 * `xacmlAuthorize`. Without a validated token it fails closed (500 `ERR_INTERNAL`: the chain is
 * misassembled). Options without any rule, or with a key it does not know (`scopes` for
 * `requiredScopes`), throw an `InvalidOptionError` at creation: such a middleware would pass
 * every token.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { introspect, requireScopes, requireToken } from 'express-access-gateway';
 *
 * app.use(
 *   '/gateway/Ente/PetStore/v1',
 *   requireToken({ policy }), introspect({ policy }),
 *   requireScopes({
 *     requiredScopes: ['pets:read'],
 *     requiredClaims: { tenant: ['acme'] },
 *     operations: [{ name: 'updatePet', requiredScopes: ['pets:write'] }],
 *   }),
 * );
 * ```
 */
export function requireScopes(options: RequireScopesOptions): Middleware {
  const check: OptionChecks = optionChecks('requireScopes');
  check.object(options, '');
  check.known(options, '', REQUIRE_SCOPES_KEYS);
  checkRules(check, options, '');
  const operations = options.operations ?? [];
  if (!Array.isArray(operations)) check.fail('operations', 'must be an array of { name, requiredScopes?, requiredClaims? }');
  operations.forEach((operation, i) => {
    check.object(operation, `operations[${i}]`);
    check.known(operation, `operations[${i}]`, OPERATION_RULE_KEYS);
    check.string(operation.name, `operations[${i}].name`);
    checkRules(check, operation, `operations[${i}]`);
  });

  // Everything a request needs, decided now: the API's rule, and each operation's merged with it.
  const apiRule = compile(options);
  const byOperation = new Map<string, ScopeRules[]>();
  for (const operation of operations) {
    if (operation.requiredScopes === undefined && operation.requiredClaims === undefined) continue;
    byOperation.set(operation.name, [...(byOperation.get(operation.name) ?? []), operation]);
  }
  const operationRules = new Map<string, CompiledRule>([...byOperation].map(([name, sets]) => [name, compile(options, ...sets)]));
  // A rule set that requires nothing would let every token through: a mistake, refused here.
  if (
    apiRule.scopes.length === 0 &&
    apiRule.claims.length === 0 &&
    [...operationRules.values()].every((rule) => rule.scopes.length === 0 && rule.claims.length === 0)
  ) {
    check.fail(
      '',
      'require no scope and no claim: give requiredScopes, requiredClaims or operations[].requiredScopes/requiredClaims (a rule set without a rule would let every token through)',
    );
  }

  return function requireScopesMiddleware(req, _res, next): void {
    const context = gatewayContext(req);
    const token = context.token;
    if (token === undefined || (token.info === undefined && token.introspection === undefined && token.jwt === undefined)) {
      next(new GatewayError('ERR_INTERNAL', { diagnostic: 'requireScopes: no validated token on the request (put it after introspect)' }));
      return;
    }
    const operation = context.api?.operation;
    const rule = (operation === undefined ? undefined : operationRules.get(operation)) ?? apiRule;
    const missing = shortfall(rule, token);
    if (missing === undefined) {
      next();
      return;
    }
    log('insufficient scope: %s', missing);
    next(
      new InsufficientScopeError(rule.challenge, {
        ...(token.policy === undefined ? {} : { realm: token.policy }),
        diagnostic: `the token lacks what the API requires: ${missing}`,
      }),
    );
  };
}

/** What the token lacks of `rule` (scope names, claim names), or `undefined` when it has it all. */
function shortfall(rule: CompiledRule, token: TokenContext): string | undefined {
  let missing: string[] | undefined;
  if (rule.scopes.length > 0) {
    const held = tokenFacts(token).scopes;
    for (const scope of rule.scopes) if (!held.includes(scope)) (missing ??= []).push(`scope ${scope}`);
  }
  for (const claim of rule.claims) {
    if (
      !holdsOneOf(claimValue(token.jwt, claim.name, claim.path), claim.allowed) &&
      !holdsOneOf(claimValue(token.introspection, claim.name, claim.path), claim.allowed)
    ) {
      (missing ??= []).push(`claim ${claim.name}`);
    }
  }
  return missing?.join(', ');
}

/** The claim `name` of `claims`: its own member, else (a dotted name) the nested member it names. */
function claimValue(claims: Readonly<Record<string, unknown>> | undefined, name: string, path: readonly string[] | undefined): unknown {
  if (claims === undefined) return undefined;
  if (Object.hasOwn(claims, name)) return claims[name];
  if (path === undefined) return undefined;
  let value: unknown = claims;
  for (const member of path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, member)) return undefined;
    value = (value as Record<string, unknown>)[member];
  }
  return value;
}

/** Whether a claim value (or, for an array, one of its items) is one of `allowed`. */
function holdsOneOf(value: unknown, allowed: ReadonlySet<string>): boolean {
  if (Array.isArray(value)) return value.some((item) => !Array.isArray(item) && holdsOneOf(item, allowed));
  if (typeof value === 'string') return allowed.has(value);
  if (typeof value === 'number' || typeof value === 'boolean') return allowed.has(JSON.stringify(value));
  return false;
}

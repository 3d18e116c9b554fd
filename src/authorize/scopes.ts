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
   * Ways to pass, as OpenAPI's `security` lists them: the token must hold every scope of at least
   * one alternative (and `requiredScopes` besides), for example
   * `[["pets:read"], ["pets:admin"]]`. An empty alternative (`[]`, OpenAPI's `{}` or a requirement
   * naming no scope) needs no scope: the rule's scopes then pass every validated token. At most
   * 16.
   */
  readonly scopeAlternatives?: ReadonlyArray<readonly string[]>;
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
  /**
   * Every way to pass when there are several (`scopeAlternatives`), each the full list of scopes
   * it needs, in the order of the rules: the problem+json body's `scope_alternatives`. The
   * challenge's `scope` names one of them.
   */
  readonly scopeAlternatives: ReadonlyArray<readonly string[]> | undefined;

  constructor(
    scope: string | undefined,
    options: { realm?: string; diagnostic: string; scopeAlternatives?: ReadonlyArray<readonly string[]> },
  ) {
    super('ERR_INSUFFICIENT_SCOPE', { ...(options.realm === undefined ? {} : { realm: options.realm }), diagnostic: options.diagnostic });
    this.scope = scope;
    this.scopeAlternatives = options.scopeAlternatives;
  }
}

/** RFC 6749 section 3.3 `scope-token`: printable ASCII but space, `"` and `\`. */
export const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Most alternatives of one rule's `scopeAlternatives`. */
export const MAX_SCOPE_ALTERNATIVES = 16;
/**
 * Most scopes of one list, and characters of one scope (an `acr` value's too): a rule (an imported
 * document's as much as an operator's) is checked on every request and named in every refusal's
 * challenge, so its size is bounded.
 */
export const MAX_RULE_SCOPES = 64;
export const MAX_SCOPE_LENGTH = 256;

export const SCOPE_MESSAGE = `must be a scope: 1 to ${MAX_SCOPE_LENGTH} printable ASCII characters, no space, " or \\`;
export const ACR_VALUE_MESSAGE = `must be an acr value: 1 to ${MAX_SCOPE_LENGTH} printable ASCII characters, no space, " or \\`;
export const SCOPE_LIST_MESSAGE = `must be an array of at most ${MAX_RULE_SCOPES} scopes`;

/** Whether `value` is a scope (or an `acr` value) a rule may hold. */
export function isRuleScope(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_SCOPE_LENGTH && SCOPE_TOKEN.test(value);
}

function scopeListIssues(scopes: unknown, at: string, issues: RuleIssue[]): void {
  if (!Array.isArray(scopes) || scopes.length > MAX_RULE_SCOPES) issues.push({ path: at, message: SCOPE_LIST_MESSAGE });
  else
    scopes.forEach((scope: unknown, i) => {
      if (!isRuleScope(scope)) issues.push({ path: `${at}[${i}]`, message: SCOPE_MESSAGE });
    });
}

/**
 * The problems of a rule set (`requiredScopes`, `requiredClaims`), every one of them; paths are
 * relative to the object that holds the two keys (`requiredScopes[1]`, `requiredClaims.tenant`).
 */
export function scopeRuleIssues(rules: {
  readonly requiredScopes?: unknown;
  readonly scopeAlternatives?: unknown;
  readonly requiredClaims?: unknown;
}): RuleIssue[] {
  const issues: RuleIssue[] = [];
  if (rules.requiredScopes !== undefined) scopeListIssues(rules.requiredScopes, 'requiredScopes', issues);
  const alternatives = rules.scopeAlternatives;
  if (alternatives !== undefined) {
    if (!Array.isArray(alternatives) || alternatives.length === 0 || alternatives.length > MAX_SCOPE_ALTERNATIVES)
      issues.push({
        path: 'scopeAlternatives',
        message: `must be an array of 1 to ${MAX_SCOPE_ALTERNATIVES} alternatives, each an array of scopes ([] for none)`,
      });
    else alternatives.forEach((alternative: unknown, i) => scopeListIssues(alternative, `scopeAlternatives[${i}]`, issues));
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

const REQUIRE_SCOPES_KEYS = optionKeys<RequireScopesOptions>({
  requiredScopes: true,
  scopeAlternatives: true,
  requiredClaims: true,
  operations: true,
});
const OPERATION_RULE_KEYS = optionKeys<OperationScopeRules>({
  name: true,
  requiredScopes: true,
  scopeAlternatives: true,
  requiredClaims: true,
});

/**
 * The ways a token may pass the scopes of rule sets checked together (an API's and an
 * operation's): each a full list of scopes, the sets' `requiredScopes` with one alternative of
 * each set that has `scopeAlternatives`, in the order the alternatives are written (the first of
 * each first). One way, without alternatives; one empty way, without any scope.
 */
export function scopeWays(...sets: ScopeRules[]): string[][] {
  const base = sets.flatMap((set) => set.requiredScopes ?? []);
  let ways: string[][] = [base];
  for (const set of sets) {
    const alternatives = set.scopeAlternatives;
    if (alternatives === undefined || alternatives.length === 0) continue;
    ways = ways.flatMap((way) => alternatives.map((alternative) => [...way, ...alternative]));
  }
  const seen = new Set<string>();
  const out: string[][] = [];
  for (const way of ways) {
    const scopes = [...new Set(way)];
    const key = [...scopes].sort().join(' ');
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(scopes);
  }
  return out;
}

/** Whether a rule set asks anything of a token: a scope on every way, or a claim. */
export function requiresSomething(...sets: ScopeRules[]): boolean {
  return sets.some((set) => Object.keys(set.requiredClaims ?? {}).length > 0) || scopeWays(...sets).every((way) => way.length > 0);
}

/** The first way of `ways` whose scopes `held` all holds, or `undefined`. */
export function heldWay(ways: ReadonlyArray<readonly string[]>, held: ReadonlySet<string>): readonly string[] | undefined {
  return ways.find((way) => way.every((scope) => held.has(scope)));
}

/** Ways a refusal lists (the body's `scope_alternatives`), and names in its diagnostic: a rule's crossed alternatives can be many. */
const LISTED_WAYS = 16;
const NAMED_WAYS = 4;

const NO_SCOPES: ReadonlySet<string> = new Set();

/** A rule set ready to check: the ways of its scopes, the claims with their allowed values. */
interface CompiledRule {
  /** At least one: `[[]]` when no scope is required. */
  readonly ways: readonly string[][];
  /** The ways a refusal lists: the first {@link LISTED_WAYS}; `undefined` with one way. */
  readonly listed: readonly string[][] | undefined;
  /** What a token holding no way lacks, said once: the scopes of the one way, or the alternatives (the first few named). */
  readonly lacking: (held: ReadonlySet<string>) => string[];
  /** Whether a scope is read at all (no way is empty). */
  readonly needsScope: boolean;
  readonly claims: ReadonlyArray<{
    readonly name: string;
    readonly path: readonly string[] | undefined;
    readonly allowed: ReadonlySet<string>;
  }>;
}

function compile(...sets: ScopeRules[]): CompiledRule {
  const ways = scopeWays(...sets);
  const claims: Array<CompiledRule['claims'][number]> = [];
  for (const set of sets) {
    for (const [name, values] of Object.entries(set.requiredClaims ?? {})) {
      claims.push({ name, path: name.includes('.') ? name.split('.') : undefined, allowed: new Set(values) });
    }
  }
  return {
    ways,
    listed: ways.length > 1 ? ways.slice(0, LISTED_WAYS) : undefined,
    lacking: lackingOf(ways),
    needsScope: ways.every((way) => way.length > 0),
    claims,
  };
}

/** The `lacking` of a rule of `ways`: the scopes missing from the one way, or the alternatives said once. */
function lackingOf(ways: readonly string[][]): (held: ReadonlySet<string>) => string[] {
  if (ways.length === 1) return (held) => ways[0]!.filter((scope) => !held.has(scope)).map((scope) => `scope ${scope}`);
  const named = ways
    .slice(0, NAMED_WAYS)
    .map((way) => way.join(' '))
    .join(' | ');
  const alternatives = `the scopes of any of ${ways.length} alternatives (${named}${ways.length > NAMED_WAYS ? ' | ...' : ''})`;
  return () => [alternatives];
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
 * With `scopeAlternatives` (OpenAPI's `security`: any one requirement suffices), a token passes
 * when it holds every scope of one alternative; the API's rules and the operation's must each
 * pass, so the ways to pass are the API's alternatives crossed with the operation's. A refusal's
 * `scope` names one way, the one whose scopes the token holds (when it lacks a claim), else the
 * first in the order written; with several ways the problem+json body lists them all in
 * `scope_alternatives` (an array of scope arrays).
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
    if (operation.requiredScopes === undefined && operation.scopeAlternatives === undefined && operation.requiredClaims === undefined)
      continue;
    byOperation.set(operation.name, [...(byOperation.get(operation.name) ?? []), operation]);
  }
  const operationRules = new Map<string, CompiledRule>([...byOperation].map(([name, sets]) => [name, compile(options, ...sets)]));
  // A rule set that requires nothing would let every token through: a mistake, refused here.
  if (!requiresSomething(options) && [...byOperation.values()].every((sets) => !requiresSomething(options, ...sets))) {
    check.fail(
      '',
      'require no scope and no claim: give requiredScopes, scopeAlternatives, requiredClaims or the same of operations[] (a rule set without a rule would let every token through; an empty alternative needs no scope)',
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
    const held = rule.needsScope ? new Set(tokenFacts(token).scopes) : NO_SCOPES;
    const way = rule.needsScope ? heldWay(rule.ways, held) : rule.ways[0];
    const missing = shortfall(rule, token, way, held);
    if (missing === undefined) {
      next();
      return;
    }
    log('insufficient scope: %s', missing);
    // The challenge names one way to pass: the one the token holds (it lacks a claim), else the first.
    const named = way ?? rule.ways[0]!;
    next(
      new InsufficientScopeError(named.length === 0 ? undefined : named.join(' '), {
        ...(token.policy === undefined ? {} : { realm: token.policy }),
        diagnostic: `the token lacks what the API requires: ${missing}`,
        ...(rule.listed === undefined ? {} : { scopeAlternatives: rule.listed }),
      }),
    );
  };
}

/**
 * What the token lacks of `rule` (scope names, claim names), or `undefined` when it has it all;
 * `way`: the way of its scopes the token holds, if any.
 */
function shortfall(
  rule: CompiledRule,
  token: TokenContext,
  way: readonly string[] | undefined,
  held: ReadonlySet<string>,
): string | undefined {
  let missing: string[] | undefined;
  if (way === undefined) missing = rule.lacking(held);
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

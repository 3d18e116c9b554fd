/**
 * The schemas of authorization in the configuration file: an API's `authorization`, the scope and
 * claim rules of an API or operation (`requireScopes`), its step-up rules
 * (`requireUserAuthentication`), and the registry of client applications. Rules the schemas cannot
 * say (a client id that is blank) stay in `applicationIssues`, `scopeRuleIssues` and
 * `stepUpRuleIssues`, run after them.
 *
 * @module
 */
import { Type, type Static } from '@sinclair/typebox';
import { NonEmptyString } from '../schema.js';
import {
  ACR_VALUE_MESSAGE,
  MAX_RULE_SCOPES,
  MAX_SCOPE_ALTERNATIVES,
  MAX_SCOPE_LENGTH,
  SCOPE_LIST_MESSAGE,
  SCOPE_MESSAGE,
  SCOPE_TOKEN,
} from './scopes.js';
import { MAX_AUTHENTICATION_AGE_LIMIT } from './step-up.js';

/** `requiredScopes`: scopes the token must all hold. */
export function requiredScopesSchema(description: string) {
  return Type.Array(Type.String({ pattern: SCOPE_TOKEN.source, maxLength: MAX_SCOPE_LENGTH, errorMessage: SCOPE_MESSAGE }), {
    maxItems: MAX_RULE_SCOPES,
    errorMessage: SCOPE_LIST_MESSAGE,
    description,
  });
}

/** `scopeAlternatives`: ways to pass, each an array of scopes the token must all hold (`[]`: none). */
export function scopeAlternativesSchema(description: string) {
  return Type.Array(requiredScopesSchema('Scopes this alternative needs, all of them (`[]`: none).'), {
    minItems: 1,
    maxItems: MAX_SCOPE_ALTERNATIVES,
    errorMessage: `must be an array of 1 to ${MAX_SCOPE_ALTERNATIVES} alternatives, each an array of scopes ([] for none)`,
    description,
  });
}

/** `requiredClaims`: claim name → allowed values. */
export function requiredClaimsSchema(description: string) {
  return Type.Record(
    Type.String(),
    Type.Array(Type.String({ errorMessage: 'must be a string' }), {
      minItems: 1,
      errorMessage: 'must be a non-empty array of allowed values (strings)',
    }),
    { errorMessage: 'must be an object mapping claim names to allowed values', description },
  );
}

/** `requiredAcrValues`: the `acr` values one of which the token's must be (step-up authentication). */
export function requiredAcrValuesSchema(description: string) {
  return Type.Array(Type.String({ pattern: SCOPE_TOKEN.source, maxLength: MAX_SCOPE_LENGTH, errorMessage: ACR_VALUE_MESSAGE }), {
    minItems: 1,
    maxItems: MAX_RULE_SCOPES,
    errorMessage: `must be a non-empty array of at most ${MAX_RULE_SCOPES} acr values`,
    description,
  });
}

/** `maxAuthenticationAge`: the most seconds since the user authenticated (step-up authentication). */
export function maxAuthenticationAgeSchema(description: string) {
  return Type.Integer({
    exclusiveMinimum: 0,
    maximum: MAX_AUTHENTICATION_AGE_LIMIT,
    errorMessage: `must be a whole number of seconds from 1 to ${MAX_AUTHENTICATION_AGE_LIMIT} (one year)`,
    description,
  });
}

/** `apis[i].authorization`. */
export const AuthorizationSchema = Type.Union(
  [
    Type.Object(
      { mode: Type.Literal('none', { description: 'No authorization: a validated token is enough.' }) },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        mode: Type.Literal('xacml-Policy', { description: 'The XACML policy decides; only Permit passes.' }),
        policy: NonEmptyString({ description: "Path of the XACML policy document, relative to the configuration file's folder." }),
        references: Type.Optional(
          Type.Array(NonEmptyString(), {
            errorMessage: 'must be an array of file paths',
            description: 'Paths of documents reachable only through references.',
          }),
        ),
      },
      { additionalProperties: false },
    ),
  ],
  {
    description: 'Authorization: `{ "mode": "none" }` (default) or `{ "mode": "xacml-Policy", "policy", "references"? }`.',
    errorMessage: 'mode must be "none" or "xacml-Policy"',
  },
);

/** One client application of the registry. */
export const ClientApplicationSchema = Type.Object(
  {
    name: NonEmptyString({ description: 'Application name (`org:gateway:subject:client`).' }),
    organization: Type.Optional(NonEmptyString({ description: 'Consuming organization (`org:gateway:subject:organization`).' })),
    roles: Type.Optional(
      Type.Array(NonEmptyString(), {
        errorMessage: 'must be an array of non-empty strings',
        description: 'Roles (`org:gateway:subject:role`).',
      }),
    ),
  },
  { additionalProperties: false, errorMessage: 'must be an object { name, organization?, roles? }' },
);

/** `applications`: client id → application. */
export const ApplicationsSchema = Type.Record(Type.String(), ClientApplicationSchema, {
  errorMessage: 'must be an object mapping client ids to applications',
  description: 'The registry of client applications: client id → `{ name, organization?, roles? }`.',
});

/** The file's authorization section, as written. */
export type AuthorizationSection = Static<typeof AuthorizationSchema>;

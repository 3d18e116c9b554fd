/**
 * Type tests of the public surface, checked at compile time by `npm run typecheck` (part of
 * `npm test`): a change that breaks what users' code relies on fails the build. Not a mocha file:
 * nothing here runs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { expectTypeOf } from 'expect-type';
import type { Registry } from 'prom-client';
import {
  createGateway,
  forwardTokenHeaders,
  GatewayError,
  InvalidOptionError,
  type InvalidOptionIssue,
  recordTransaction,
  requireScopes,
  requireUserAuthentication,
  requireToken,
  serveGateway,
  type DiagnosticCode,
  type Gateway,
  type GatewayMetricsOptions,
  type GatewayContext,
  type GatewayErrorCode,
  type Middleware,
  type OperatorRole,
  type OperatorsOptions,
  type XacmlAuthorizeOptions,
  type XacmlDecision,
  xacmlAuthorize,
} from '../src/index.js';

// Every middleware factory returns the one Middleware shape, usable without Express types.
expectTypeOf(requireToken({})).toMatchTypeOf<Middleware>();
expectTypeOf(forwardTokenHeaders({})).toMatchTypeOf<Middleware>();
expectTypeOf(recordTransaction({})).toMatchTypeOf<Middleware>();
expectTypeOf(requireScopes({ requiredScopes: ['read'] })).toMatchTypeOf<Middleware>();
expectTypeOf(
  requireUserAuthentication({
    requiredAcrValues: ['urn:mace:incommon:iap:silver'],
    operations: [{ name: 'transfer', maxAuthenticationAge: 300 }],
  }),
).toMatchTypeOf<Middleware>();
// xacmlAuthorize's hooks see Express's Request by default (it mounts with app.use), and a plain
// Node request when asked: then it is the one Middleware shape too.
const policy = '<Policy/>';
expectTypeOf(xacmlAuthorize({ xacmlPolicy: policy })).toMatchTypeOf<RequestHandler>();
expectTypeOf(xacmlAuthorize<IncomingMessage>({ xacmlPolicy: policy })).toMatchTypeOf<Middleware>();
expectTypeOf(xacmlAuthorize({ xacmlPolicy: policy, operation: (req) => req.path })).toMatchTypeOf<RequestHandler>();
expectTypeOf<Parameters<NonNullable<XacmlAuthorizeOptions['subject']>>[0]>().toEqualTypeOf<Request>();
expectTypeOf<Middleware>().parameters.toEqualTypeOf<[IncomingMessage, ServerResponse, (err?: unknown) => void]>();
// The gateway as a node:http handler, an Express router and a server.
expectTypeOf<Gateway['handler']>().toMatchTypeOf<(req: IncomingMessage, res: ServerResponse) => void>();
expectTypeOf(createGateway).returns.toEqualTypeOf<Gateway>();
expectTypeOf(serveGateway).parameter(0).toEqualTypeOf<Gateway>();
// Metrics: the gateway's own prom-client registry, to mount or merge.
expectTypeOf<NonNullable<Gateway['metrics']>['registry']>().toEqualTypeOf<Registry>();
expectTypeOf<GatewayMetricsOptions>().toEqualTypeOf<{ auth?: boolean; clientLabel?: boolean; processMetrics?: boolean }>();
// Errors: stable codes, typed.
expectTypeOf<GatewayError['code']>().toEqualTypeOf<GatewayErrorCode>();
expectTypeOf<InvalidOptionError['code']>().toEqualTypeOf<'ERR_INVALID_OPTION'>();
expectTypeOf<InvalidOptionError>().toMatchTypeOf<TypeError>();
expectTypeOf<InvalidOptionError['issues']>().toEqualTypeOf<readonly InvalidOptionIssue[]>();
expectTypeOf<'ERR_TOKEN_INVALID'>().toMatchTypeOf<DiagnosticCode>();
expectTypeOf<'XACML_DECISION'>().toMatchTypeOf<DiagnosticCode>();
expectTypeOf<'not a code'>().not.toMatchTypeOf<DiagnosticCode>();
// The per-request state.
expectTypeOf<GatewayContext['authorization']>().toEqualTypeOf<
  | {
      decision: XacmlDecision;
      statusCode: string;
      statusMessage?: string;
      text: string;
      explanation?: XacmlExplanation;
      request?: RequestContext;
    }
  | undefined
>();
// A record keeps why a request was denied, and its request turns back into one the evaluator takes.
expectTypeOf<NonNullable<TransactionRecord['authorization']>['request']>().toEqualTypeOf<RecordedXacmlRequest | undefined>();
expectTypeOf<NonNullable<TransactionRecord['authorization']>['explanation']>().toEqualTypeOf<XacmlExplanation | undefined>();
expectTypeOf<TransactionRecord['requestBody']>().toEqualTypeOf<RecordedBody | undefined>();
expectTypeOf<RecordedBody['encoding']>().toEqualTypeOf<'utf8' | 'base64'>();
expectTypeOf(xacmlRequestOf).returns.toEqualTypeOf<RequestContext | undefined>();
expectTypeOf(toXacmlRequest).parameter(0).toEqualTypeOf<RecordedXacmlRequest>();
expectTypeOf<NonNullable<XacmlExplanation['decidedBy']>['rule']>().toEqualTypeOf<string | undefined>();
expectTypeOf<XacmlDecision>().toEqualTypeOf<'Permit' | 'Deny' | 'NotApplicable' | 'Indeterminate'>();

import {
  toXacmlRequest,
  xacmlRequestOf,
  type RecordedBody,
  type RecordedXacmlRequest,
  type TransactionRecord,
  type XacmlExplanation,
} from '../src/index.js';
import type { RequestContext } from '../src/xacml/index.js';

// Outcome groups name outcome codes; statistics may carry the top lists.
import { outcomeGroups, type OutcomeCode, type OutcomeGroup, type TransactionStats, type TransactionStatsTop } from '../src/index.js';
expectTypeOf(outcomeGroups).toEqualTypeOf<Readonly<Record<OutcomeGroup, readonly OutcomeCode[]>>>();
expectTypeOf<TransactionStats['top']>().toEqualTypeOf<TransactionStatsTop | undefined>();

// Operators: roles and the createGateway option.
expectTypeOf<OperatorRole>().toEqualTypeOf<'viewer' | 'operator' | 'admin'>();
expectTypeOf<Parameters<typeof createGateway>[0]['operators']>().toEqualTypeOf<OperatorsOptions | undefined>();

// The configuration's sources: a store such as PostgresConfigSource is a ConfigSource and a ConfigStore.
import { PostgresConfigSource, type ConfigSource, type ConfigStore } from '../src/index.js';
expectTypeOf<PostgresConfigSource>().toMatchTypeOf<ConfigStore>();
expectTypeOf<PostgresConfigSource>().toMatchTypeOf<ConfigSource>();
expectTypeOf(PostgresConfigSource.create).returns.toEqualTypeOf<Promise<PostgresConfigSource>>();

// The what-if answer of the configuration API, for scripts that read it.
import type { WhatIfReport, WhatIfSkipReason } from '../src/index.js';
expectTypeOf<WhatIfReport['changed'][number]['draft']['decision']>().toEqualTypeOf<XacmlDecision>();
expectTypeOf<WhatIfReport['skipped'][number]['reason']>().toEqualTypeOf<WhatIfSkipReason>();
expectTypeOf<WhatIfSkipReason>().toEqualTypeOf<'permit' | 'noAuthorization' | 'noRequest' | 'unreadable'>();

// An API's token forwarding takes what the configuration file takes: `enabled` may be left out,
// and the mode is headers or json (jws needs a signing key: forwardTokenHeaders, in code).
import type { GatewayConfig, TokenForwardSection } from '../src/index.js';
type ApiTokenForward = NonNullable<NonNullable<GatewayConfig['apis'][number]['tokenManagement']>['tokenForward']>;
expectTypeOf<ApiTokenForward>().toEqualTypeOf<boolean | TokenForwardSection>();
const forwardJson: ApiTokenForward = { mode: 'json', originalToken: { header: 'X-Token' } };
// @ts-expect-error -- a file cannot give a signing key
const forwardJws: ApiTokenForward = { enabled: true, mode: 'jws' };
// @ts-expect-error -- originalToken is none, asReceived, authorizationHeader, query or { header }
const forwardCookie: ApiTokenForward = { originalToken: 'cookie' };
void [forwardJson, forwardJws, forwardCookie];

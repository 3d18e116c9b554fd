/**
 * The public surface is named, not accumulated: every value the package exports is listed here,
 * so that adding one is a decision, and no internal helper (token context factory, the id-header
 * marker, the configuration cache, the console's CSP) reaches users.
 */
import { expect } from 'chai';
import * as api from '../../src/index.js';

const PUBLIC_VALUES = [
  'ApplicationRegistry',
  'CONSOLE_REQUEST_HEADER',
  'ConfigError',
  'FileConfigStore',
  'GatewayCluster',
  'DEFAULT_REDACTED_HEADERS',
  'GatewayError',
  'InsufficientScopeError',
  'InsufficientUserAuthenticationError',
  'InvalidOptionError',
  'MemoryAuditLog',
  'MemoryReplayStore',
  'MemoryTransactionStore',
  'PostgresConfigSource',
  'PostgresTransactionStore',
  'RedisConnection',
  'RedisPackageMissingError',
  'SharedTokenResults',
  'TokenPolicy',
  'TrafficControlError',
  'TrafficStoreError',
  'VersionConflictError',
  'XacmlAttributes',
  'XacmlPolicySource',
  'addDiagnostic',
  'adminRouter',
  'apiKey',
  'bearerChallenge',
  'buildXacmlRequest',
  'certificateThumbprint',
  'connectRedis',
  'createGateway',
  'createGatewayCluster',
  'createRelay',
  'createTokenPolicy',
  'decisionText',
  'defaultForwardedHeaderNames',
  'diagnosticCodes',
  'errorCatalogue',
  'forwardTokenHeaders',
  'gatewayContext',
  'hashPassword',
  'identifyApplication',
  'introspect',
  'isGatewayError',
  'loadConfig',
  'messageSets',
  'messagesEn',
  'messagesIt',
  'monitoringConsole',
  'outcomeGroups',
  'outcomeLabels',
  'problemJsonErrorHandler',
  'recordTransaction',
  'renderMessage',
  'renderProblem',
  'requireScopes',
  'requireToken',
  'requireUserAuthentication',
  'resolveConfig',
  'sendProblem',
  'serveGateway',
  'toRequestXml',
  'toXacmlRequest',
  'trafficControl',
  'xacmlAuthorize',
  'xacmlRequestOf',
];

describe('the public surface', () => {
  it('exports exactly the listed values', () => {
    expect(Object.keys(api).sort()).to.deep.equal([...PUBLIC_VALUES].sort());
  });

  it('leaks none of the internals', () => {
    for (const internal of [
      'createTokenContext',
      'ID_HEADERS_ON_HEAD',
      'ConfigCache',
      'CONSOLE_CSP',
      'optionChecks',
      'recordTransactionWithoutIdHeaders',
    ]) {
      expect(api, internal).to.not.have.property(internal);
    }
  });
});

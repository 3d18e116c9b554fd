/**
 * The attribute identifiers of the XACML request the gateway builds from an invocation
 * (docs/xacml-attributes.md, "Every attribute"). Policies name them in their attribute designators.
 *
 * @module
 */

/** Prefix of every gateway-specific attribute identifier. */
const GW = 'org:gateway';

/**
 * Attribute identifiers of the gateway's XACML request. The ones ending in `Prefix` are
 * completed by a name (header, URL parameter, claim).
 */
export const XacmlAttributes = {
  /** Action `action-id`: the operation name. */
  actionId: 'urn:oasis:names:tc:xacml:1.0:action:action-id',
  /** Subject `subject-id`: the token's subject, else its client id. */
  subjectId: 'urn:oasis:names:tc:xacml:1.0:subject:subject-id',
  /** Resource `resource-id`: the path of the invocation URL. */
  resourceId: 'urn:oasis:names:tc:xacml:1.0:resource:resource-id',
  /** Environment current time (`xs:time`). */
  currentTime: 'urn:oasis:names:tc:xacml:1.0:environment:current-time',
  /** Environment current date (`xs:date`). */
  currentDate: 'urn:oasis:names:tc:xacml:1.0:environment:current-date',
  /** Environment current date and time (`xs:dateTime`). */
  currentDateTime: 'urn:oasis:names:tc:xacml:1.0:environment:current-dateTime',

  /** Audience of the token (bag). */
  audience: `${GW}:action:token:audience`,
  /** Scopes of the token (bag). */
  scope: `${GW}:action:token:scope`,
  /** One attribute per claim of the validated JWT. */
  jwtClaimPrefix: `${GW}:action:token:jwt:claim:`,
  /** One attribute per claim of the introspection response. */
  introspectionClaimPrefix: `${GW}:action:token:introspection:claim:`,
  /** Providing subject, `type/name`. */
  provider: `${GW}:action:provider`,
  /** Service, `type/name`. */
  service: `${GW}:action:service`,
  /** Name of the invoked operation. */
  action: `${GW}:action:action`,
  /** Invocation URL used by the sender (without `access_token`). */
  url: `${GW}:action:url`,
  /** One attribute per URL parameter. */
  urlParameterPrefix: `${GW}:action:url:parameter:`,
  /** One attribute per HTTP header (lower-case name). */
  headerPrefix: `${GW}:action:transport:header:`,
  /** `SOAPAction` header value, when present. */
  soapAction: `${GW}:action:soapAction`,
  /** Role of the transaction: `inbound`. */
  gwService: `${GW}:action:gwService`,
  /** Usage profile of the service: `rest`. */
  protocol: `${GW}:action:protocol`,

  /** `iss` of the token. */
  tokenIssuer: `${GW}:subject:token:issuer`,
  /** `sub` of the token. */
  tokenSubject: `${GW}:subject:token:subject`,
  /** `username` of the token. */
  tokenUsername: `${GW}:subject:token:username`,
  /** `azp` of the token, else `client_id`. */
  tokenClientId: `${GW}:subject:token:clientId`,
  /** The token's sender constraint the request proved (`x5t#S256`: certificate-bound, RFC 8705; `jkt`: DPoP-bound, RFC 9449); absent for a bearer token. */
  tokenBinding: `${GW}:subject:token:binding`,
  /** UserInfo full name. */
  userInfoFullName: `${GW}:subject:token:userInfo:fullName`,
  /** UserInfo first name. */
  userInfoFirstName: `${GW}:subject:token:userInfo:firstName`,
  /** UserInfo middle name. */
  userInfoMiddleName: `${GW}:subject:token:userInfo:middleName`,
  /** UserInfo family name. */
  userInfoFamilyName: `${GW}:subject:token:userInfo:familyName`,
  /** UserInfo e-mail. */
  userInfoEMail: `${GW}:subject:token:userInfo:eMail`,
  /** One attribute per claim of the UserInfo response. */
  userInfoClaimPrefix: `${GW}:subject:token:userInfo:claim:`,
  /** Consuming subject (organization). */
  organization: `${GW}:subject:organization`,
  /** Identifier of the client application. */
  client: `${GW}:subject:client`,
  /** Credential the client used (username, subject or principal). */
  credential: `${GW}:subject:credential`,
  /** Roles of the client (bag). */
  role: `${GW}:subject:role`,
} as const;

/** `http://www.w3.org/2001/XMLSchema#time`. */
export const XS_TIME = 'http://www.w3.org/2001/XMLSchema#time';
/** `http://www.w3.org/2001/XMLSchema#date`. */
export const XS_DATE = 'http://www.w3.org/2001/XMLSchema#date';
/** `http://www.w3.org/2001/XMLSchema#dateTime`. */
export const XS_DATE_TIME = 'http://www.w3.org/2001/XMLSchema#dateTime';

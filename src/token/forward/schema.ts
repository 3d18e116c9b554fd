/**
 * The schema of token forwarding: the modes and the original token, as `forwardTokenHeaders`
 * takes them and as an API's `tokenManagement.tokenForward` of the configuration file gives them.
 * One set of rules for both: the middleware checks `originalToken` with {@link OriginalTokenSchema},
 * the file's section is {@link TokenForwardSchema}.
 *
 * @module
 */
import { Type, type Static } from '@sinclair/typebox';

/** How the collected token information travels: one header per item, a base64 JSON, or a signed JWT. */
export const FORWARD_INFO_MODES = ['headers', 'json', 'jws'] as const;

/** The modes a configuration file can set: `jws` needs a signing key, which JSON cannot hold. */
export const FILE_FORWARD_INFO_MODES = ['headers', 'json'] as const;

/** The ways the original token can go on, besides none. */
export const ORIGINAL_TOKEN_MODES = ['asReceived', 'authorizationHeader', 'query'] as const;

/** An HTTP header name (RFC 9110 token). */
function headerName(description: string) {
  return Type.String({ pattern: "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$", errorMessage: 'must be a header name', description });
}

/** `{ header }`: the bare token in a custom header. */
export const OriginalTokenHeaderSchema = Type.Object(
  { header: headerName('Name of the request header that carries the token to the backend.') },
  { additionalProperties: false },
);

/** `originalToken` of `forwardTokenHeaders` (`false` and `'none'` both mean none). */
export const OriginalTokenSchema = Type.Union(
  [Type.Literal(false), Type.Literal('none'), ...ORIGINAL_TOKEN_MODES.map((mode) => Type.Literal(mode)), OriginalTokenHeaderSchema],
  { errorMessage: 'must be false, none, asReceived, authorizationHeader, query or { header: <name> }' },
);

/** An API's token forwarding in the configuration file: `true` for the default headers mode. */
export const TokenForwardSchema = Type.Union(
  [
    Type.Boolean(),
    Type.Object(
      {
        enabled: Type.Optional(Type.Boolean({ description: 'Forward token information. Default `true` when the section is given.' })),
        mode: Type.Optional(
          Type.Union(
            FILE_FORWARD_INFO_MODES.map((mode) => Type.Literal(mode)),
            {
              description: 'How the collected information goes: one header per item (`headers`, default) or base64 JSON (`json`).',
              errorMessage:
                'must be one of headers, json (jws needs a signing key, which a JSON file cannot hold: use forwardTokenHeaders in code)',
            },
          ),
        ),
        originalToken: Type.Optional(
          Type.Union([Type.Literal('none'), ...ORIGINAL_TOKEN_MODES.map((mode) => Type.Literal(mode)), OriginalTokenHeaderSchema], {
            description:
              'How the original token goes as well: `none` (default), `asReceived`, `authorizationHeader`, `query` or `{ "header": name }`.',
            errorMessage: 'must be none, asReceived, authorizationHeader, query or { header: <name> }',
          }),
        ),
      },
      { additionalProperties: false },
    ),
  ],
  {
    description: 'Token Forward: `true` for the headers mode, or `{ enabled, mode, originalToken }`. Default `false`.',
    errorMessage: 'must be a boolean or an object { enabled?, mode?, originalToken? }',
  },
);

/** The file's token forwarding, as written. */
export type TokenForwardSection = Static<typeof TokenForwardSchema>;

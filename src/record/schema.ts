/**
 * The schema of an API's message recording in the configuration file (docs/gateway.md, "apis[]").
 *
 * @module
 */
import { Type, type Static } from '@sinclair/typebox';
import { OneOf, PositiveInteger } from '../schema.js';

/** Default most bytes of a recorded body. */
export const DEFAULT_MAX_BODY_BYTES = 4096;
/** Largest `maxBodyBytes`: a record stays a record, not a copy of the traffic. */
export const MAX_BODY_BYTES = 1_048_576;

/** Which authorization decisions keep the XACML request's attributes. */
export const XACML_REQUEST_RECORDING = ['denied', 'all'] as const;

/** `apis[i].recording`. */
export const RecordingSchema = Type.Object(
  {
    incomingHeaders: Type.Optional(Type.Boolean({ description: 'Record the headers the client sent. Default `false`.' })),
    outgoingHeaders: Type.Optional(Type.Boolean({ description: 'Record every header the backend received. Default `false`.' })),
    requestBody: Type.Optional(
      Type.Boolean({ description: 'Record the request body the backend received (its first `maxBodyBytes` bytes). Default `false`.' }),
    ),
    responseBody: Type.Optional(
      Type.Boolean({ description: "Record the backend's response body (its first `maxBodyBytes` bytes). Default `false`." }),
    ),
    maxBodyBytes: Type.Optional(
      PositiveInteger({
        maximum: MAX_BODY_BYTES,
        description: `Most bytes of each body kept. Default \`${DEFAULT_MAX_BODY_BYTES}\`, at most \`${MAX_BODY_BYTES}\`.`,
      }),
    ),
    xacmlRequests: Type.Optional(
      OneOf(XACML_REQUEST_RECORDING, { description: 'Which decisions keep the XACML request: `denied` (default) or `all`.' }),
    ),
  },
  { additionalProperties: false, description: 'Message recording: what a record keeps besides its summary.' },
);

/** The file's recording section, as written. */
export type RecordingSection = Static<typeof RecordingSchema>;

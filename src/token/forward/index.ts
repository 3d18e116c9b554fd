/**
 * Token forwarding to the backend.
 *
 * @module
 */
export { forwardTokenHeaders } from './forward-token-headers.js';
export type { ForwardInfoMode, ForwardJwsOptions, ForwardTokenHeadersOptions, OriginalTokenMode } from './options.js';
export { defaultForwardedHeaderNames } from './items.js';
export type { ForwardDateFormat, ForwardedItem } from './items.js';

/**
 * The admin areas are `admin/areas.ts`; this module remains for `gateway/config/`, which imports
 * it by this path until it moves to `src/config/`.
 *
 * @module
 */
export { RESERVED_PROVIDERS } from '../admin/areas.js';

/**
 * Operation path templates are `url/template.ts`; this module remains for `gateway/config/`, which
 * imports it by this path until it moves to `src/config/`.
 *
 * @module
 */
export { compilePathTemplate, type PathTemplate } from '../url/template.js';

/**
 * The paths the admin listener owns under `basePath`, side by side with the APIs'
 * (`<basePath>/<provider>/<api>/v<n>/...`): an API may never take one of them as its provider.
 *
 * @module
 */

/**
 * The first path segments under `basePath` of the admin listener's routers that operators use
 * (admin routes, sign-in, configuration console, monitoring console, metrics): the operators'
 * session cookie is scoped to exactly these paths.
 */
export const ADMIN_AREAS: readonly string[] = ['admin', 'operators', 'configuration', 'console', 'metrics'];

/**
 * Providers refused in a configuration: the admin areas and `health`. An API there would share a
 * path with the admin listener, so a browser would send it the operators' session cookie.
 * Compared as written (paths, and cookie paths, are case-sensitive).
 */
export const RESERVED_PROVIDERS: ReadonlySet<string> = new Set([...ADMIN_AREAS, 'health']);

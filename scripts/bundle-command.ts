/**
 * The `express-access-gateway` command as one file, written over dist/server/cli.js after `tsc`:
 * the command and the library's modules it loads, with the dependencies that are plain libraries,
 * in one ES module. Node then reads and compiles one file instead of some 600 modules: a start
 * (every `serve`, every worker of `serve --workers`) costs about half the CPU time.
 *
 * Left outside, loaded from node_modules as the modules load them: the peer dependencies (express,
 * pg, redis, so that the host's copies serve), pino, the OpenTelemetry API and SDK (one global
 * tracer provider), and what is loaded only on demand (js-yaml, the OpenAPI parser of the
 * configuration console's worker, which runs from its own module). A module that reads a file of
 * the package names it from the package's root (page-assets/files.ts, `moduleFile`), so the names
 * hold in the bundle, one folder deep like the modules. The library's entry points are not bundled.
 */
import { build } from 'esbuild';
import path from 'node:path';

const dist = path.resolve(process.argv[2] ?? 'dist');
const entry = path.join(dist, 'server', 'cli.js');

const EXTERNAL = ['express', 'pg', 'redis', 'pino', '@opentelemetry/*', 'js-yaml', '@readme/openapi-parser'];

await build({
  entryPoints: [entry],
  outfile: entry,
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.19',
  external: EXTERNAL,
  // CommonJS dependencies call require(): give the module one.
  banner: {
    js: "import { createRequire as createRequireOfBundle } from 'node:module';\nconst require = createRequireOfBundle(import.meta.url);",
  },
  sourcemap: true,
  sourcesContent: false,
  logLevel: 'warning',
});

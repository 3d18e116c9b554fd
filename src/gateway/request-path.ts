/**
 * The gateway's request path: which requests are the gateway's, their canonical target, routing to
 * a registered API, the API's steps, and problem+json for every error. One function serves plain
 * `node:http` (`gateway.handler`) and Express (`gateway.router` calls it).
 *
 * @module
 */
import { METHODS, type IncomingMessage, type ServerResponse } from 'node:http';
import { gatewayContext, type RecordingContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import type { ErrorHandler } from '../problem/handler.js';
import type { Middleware } from '../context.js';
import { runChain } from './chain.js';
import type { CompiledApi, Runtime } from './compile.js';
import { canonicalTarget, isRefused, type CanonicalTarget, type RefusedTarget, type RequestTargetRules } from '../url/request-target.js';
import { apiKey } from '../record/types.js';
import { keepReceivedHeaders } from '../exchange/capture.js';
import { findOperation, parseInvocation } from './routing.js';
import { challengeResourceMetadata } from '../problem/render.js';
import { metadataAnswer, RESOURCE_METADATA_PATH, resourceMetadataUrl } from './resource-metadata.js';

const log = logger('gateway');

/** The per-request recording settings of an API's configuration: one frozen object per configuration, shared by its requests. */
const recordings = new WeakMap<object, RecordingContext | undefined>();

function recordingOf(recording: CompiledApi['api']['recording']): RecordingContext | undefined {
  if (recordings.has(recording)) return recordings.get(recording);
  const { incomingHeaders, outgoingHeaders, requestBody, responseBody, maxBodyBytes } = recording;
  const context =
    incomingHeaders || outgoingHeaders || requestBody || responseBody
      ? Object.freeze({ incomingHeaders, outgoingHeaders, requestBody, responseBody, maxBodyBytes })
      : undefined;
  recordings.set(recording, context);
  return context;
}

/** The methods Node's parser knows: any other reaches the handler only from `serveGateway`'s listener. */
const PARSED_METHODS = new Set(METHODS);

/**
 * 501 `ERR_METHOD_NOT_IMPLEMENTED` for a method no route can serve: CONNECT (no tunnels) or one
 * Node's parser does not know (what `serveGateway` hands over from its `connect` and `clientError`).
 */
function unservedMethod(method: string | undefined): GatewayError | undefined {
  if (method !== undefined && method !== 'CONNECT' && PARSED_METHODS.has(method)) return undefined;
  return new GatewayError('ERR_METHOD_NOT_IMPLEMENTED', {
    diagnostic: `the method ${JSON.stringify(String(method).slice(0, 64))} is not served: no route relays it`,
  });
}

/** What {@link createRequestPath}'s decision says of a request for an API's protected resource metadata. */
const METADATA: unique symbol = Symbol('protected resource metadata');

/** Serves a request with the runtime in force. */
type Serve = (runtime: Runtime, req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** Runs `serve` with the runtime in force, once there is one. */
function withRuntime(settings: Pick<RequestPathSettings, 'runtime'>, serve: Serve): Middleware {
  return (req, res, next) => {
    const runtime = settings.runtime();
    if (!(runtime instanceof Promise)) {
      serve(runtime, req, res, next);
      return;
    }
    runtime.then(
      (loaded) => serve(loaded, req, res, next),
      (err: unknown) => {
        // No configuration was ever loaded: fail closed, the cause in diagnostics and logs only.
        const cause = (err as Error)?.message ?? String(err);
        log('no configuration in force: %s', cause);
        next(new GatewayError('ERR_INTERNAL', { diagnostic: `no configuration in force: ${cause}`, cause: err }));
      },
    );
  };
}

/** A plain `node:http` handler that may pass requests it does not serve to `next`. */
export type GatewayHandler = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;

/** What the request path is built from. */
export interface RequestPathSettings {
  /** The base path, normalized (`/` or without a trailing `/`). */
  readonly basePath: string;
  /** The canonical-target rules. */
  readonly targetRules: RequestTargetRules;
  /** Longest request target read, in bytes (Node gives the request line one character per byte). */
  readonly maxRequestTargetBytes: number;
  /** The recorder, first on the path. */
  readonly record: Middleware;
  /** Renders errors as problem+json. */
  readonly errorHandler: ErrorHandler;
  /** The `Server` header of the gateway's own answers (the protected resource metadata); none when undefined. */
  readonly server?: string | undefined;
  /** The runtime in force (a promise while the first configuration loads). */
  runtime(): Runtime | Promise<Runtime>;
  /**
   * Admits a request of the gateway before any other work (the instance cap): `undefined`, or the
   * refusal to answer at once. Default: every request.
   */
  admit?(res: ServerResponse): GatewayError | undefined;
}

/** Creates the request path. */
export function createRequestPath(settings: RequestPathSettings): GatewayHandler {
  const { basePath, targetRules, maxRequestTargetBytes, record, errorHandler } = settings;
  const baseLower = basePath.toLowerCase();
  /** Where the APIs' protected resource metadata is (RFC 9728 section 3.1): the well-known segment, then the base path. */
  const metadataPrefix = `${RESOURCE_METADATA_PATH}${basePath === '/' ? '' : basePath}/`;

  /** Whether a canonical path is one of the APIs' metadata (`<metadataPrefix><provider>/<name>/v<version>`, any API). */
  function isMetadataPath(path: string): boolean {
    return path.startsWith(metadataPrefix);
  }

  /** Whether the raw path is under the base path the way Express's mount matched it (any case). */
  function claimsRaw(url: string): boolean {
    if (basePath === '/') return true;
    if (url.length < baseLower.length || url.slice(0, baseLower.length).toLowerCase() !== baseLower) return false;
    const after = url.charCodeAt(baseLower.length);
    return Number.isNaN(after) || after === 47 /* / */ || after === 63; /* ? */
  }

  /** The canonical path below the base path (its exact case), or `undefined` outside it. */
  function under(path: string): string | undefined {
    if (basePath === '/') return path;
    if (path === basePath) return '/';
    return path.startsWith(basePath) && path.charCodeAt(basePath.length) === 47 ? path.slice(basePath.length) : undefined;
  }

  /**
   * Decides the request's canonical target, once, before anything reads the URL: refused → 400
   * `ERR_PATH_REFUSED` before any token work; outside the base path in its exact case → 404;
   * otherwise `req.url` (below the base path) and `req.originalUrl` become the canonical form,
   * which the recorder, routing, XACML and the relay all read.
   */
  function decide(req: IncomingMessage, raw: string, target: CanonicalTarget | RefusedTarget): GatewayError | typeof METADATA | undefined {
    if (isRefused(target)) return new GatewayError('ERR_PATH_REFUSED', { diagnostic: `request target refused: ${target.refused}` });
    // Before the base path: with base path `/` a metadata path is under it too, and never an API's.
    const metadata = isMetadataPath(target.path);
    const rest = metadata ? target.path : under(target.path);
    if (rest === undefined) {
      return new GatewayError('ERR_API_NOT_FOUND', {
        diagnostic: `${target.path} is not under the base path ${basePath} (paths are case-sensitive)`,
      });
    }
    const query = target.query === '' && !raw.endsWith('?') ? '' : `?${target.query}`;
    const withOriginal = req as IncomingMessage & { originalUrl?: string };
    const original = withOriginal.originalUrl;
    // A host that mounted the gateway below a path of its own keeps that prefix.
    const mount = typeof original === 'string' && original.endsWith(raw) ? original.slice(0, original.length - raw.length) : '';
    req.url = rest + query;
    withOriginal.originalUrl = mount + target.path + query;
    return metadata ? METADATA : undefined;
  }

  function route(runtime: Runtime, req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void {
    const url = req.url ?? '/';
    const parsed = parseInvocation(url);
    const compiled =
      parsed === undefined ? undefined : runtime.apis.get(apiKey({ provider: parsed.provider, name: parsed.api, version: parsed.version }));
    if (parsed === undefined || compiled === undefined) {
      next(new GatewayError('ERR_API_NOT_FOUND', { diagnostic: `no registered API at ${basePath}${url.split('?')[0]}` }));
      return;
    }
    const { api } = compiled;
    const context = gatewayContext(req);
    // Set before the operation is looked for: a request no operation takes is recorded under its API.
    context.api = { provider: api.provider, name: api.name, version: api.version, resourcePath: parsed.resourcePath };
    if (api.operations !== undefined) {
      const found = findOperation(api.operations, req.method ?? 'GET', parsed.resourcePath);
      if (found === undefined) {
        next(
          new GatewayError('ERR_OPERATION_NOT_FOUND', {
            params: { serviceName: api.name, serviceVersion: api.version, providerName: api.provider },
            diagnostic: `${parsed.prefix} has no operation ${req.method} ${parsed.resourcePath}`,
          }),
        );
        return;
      }
      context.api.operation = found.name;
    }
    // RFC 9728 sections 3.3 and 5.1: the API's challenges name the metadata of the URL requested.
    if (compiled.metadata !== undefined) challengeResourceMetadata(req, resourceMetadataUrl(compiled.metadata, url));
    const recording = recordingOf(api.recording);
    if (recording !== undefined) {
      context.recording = recording;
      // The client's headers as received, before the API's steps edit them (token forwarding does).
      if (recording.incomingHeaders === true) keepReceivedHeaders(context, req.rawHeaders);
    }
    runChain(compiled.chain, req, res, next);
  }

  // The recorder first (refusals are recorded too), then the API's steps.
  const requestPath: readonly Middleware[] = [record, withRuntime(settings, route)];
  const metadataPath: readonly Middleware[] = [record, withRuntime(settings, metadataAnswer(metadataPrefix, settings.server))];
  const refusalPath = (error: GatewayError): readonly Middleware[] => [record, (_req, _res, next) => next(error)];

  const admit = settings.admit;

  return function gatewayHandler(req, res, next) {
    const raw = req.url ?? '/';
    // Bounded before anything reads it: canonical form, routing and templates are linear in its
    // length, but each still costs that length, on every request.
    const tooLong = raw.length > maxRequestTargetBytes;
    let target: CanonicalTarget | RefusedTarget | undefined;
    if (next !== undefined && !claimsRaw(raw)) {
      target = tooLong ? undefined : canonicalTarget(raw, targetRules);
      if (target === undefined || isRefused(target) || (under(target.path) === undefined && !isMetadataPath(target.path))) {
        next();
        return;
      }
    }
    const outer =
      next ??
      ((err?: unknown) => {
        if (err !== undefined) res.destroy();
      });
    // The request is the gateway's: the instance cap before any other work (recorded all the same).
    const busy = admit?.(res);
    if (busy !== undefined) {
      runChain(refusalPath(busy), req, res, (err) => errorHandler(err ?? busy, req, res, outer));
      return;
    }
    if (target === undefined && !tooLong) target = canonicalTarget(raw, targetRules);
    const refusal =
      unservedMethod(req.method) ??
      (target === undefined
        ? new GatewayError('ERR_URI_TOO_LONG', {
            diagnostic: `request target of ${raw.length} bytes refused: the limit is ${maxRequestTargetBytes}`,
          })
        : decide(req, raw, target));
    const path = refusal === undefined ? requestPath : refusal === METADATA ? metadataPath : refusalPath(refusal);
    runChain(path, req, res, (err) => {
      if (err !== undefined && err !== null) errorHandler(err, req, res, outer);
      else if (!res.headersSent)
        errorHandler(new GatewayError('ERR_INTERNAL', { diagnostic: 'the request path ended without an answer' }), req, res, outer);
    });
  };
}

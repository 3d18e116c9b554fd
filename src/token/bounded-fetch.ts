/**
 * A `fetch` for openid-client (its `customFetch`) that reads at most a given number of bytes of a
 * response body: discovery, introspection and UserInfo answers larger than that are refused before
 * they are buffered, so a hostile or broken authorization server cannot make the gateway hold
 * megabytes per request (nor cache them).
 *
 * @module
 */

/** Thrown (as the cause of openid-client's error) when a response body is larger than the bound. */
export class ResponseTooLargeError extends Error {
  /** The bound, in bytes. */
  readonly limit: number;

  constructor(limit: number) {
    super(`response body larger than ${limit} bytes`);
    this.name = 'ResponseTooLargeError';
    this.limit = limit;
  }
}

/** What openid-client hands its `customFetch`: `fetch`'s arguments. */
type FetchArguments = [url: string, options: RequestInit];

/**
 * A `fetch` whose response bodies are cut at `limit` bytes (decoded bytes, as the client reads
 * them): a `Content-Length` above it is refused before the body is read; otherwise the body
 * stream errors with {@link ResponseTooLargeError} at the first byte over the bound, and the rest
 * is not read (the connection is released by cancelling the source).
 */
export function boundedFetch(limit: number): (...args: FetchArguments) => Promise<Response> {
  return async (url, options) => {
    const response = await fetch(url, options);
    const declared = Number(response.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > limit) {
      await response.body?.cancel().catch(() => undefined);
      throw new ResponseTooLargeError(limit);
    }
    if (response.body === null) return response;
    let size = 0;
    const bounded = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          size += chunk.byteLength;
          if (size > limit) controller.error(new ResponseTooLargeError(limit));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(bounded, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** The {@link ResponseTooLargeError} in an error's cause chain (openid-client wraps it), if any. */
export function responseTooLarge(err: unknown): ResponseTooLargeError | undefined {
  let current = err;
  // openid-client nests it at most a few levels deep (ClientError > OperationProcessingError > ...).
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    if (current instanceof ResponseTooLargeError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

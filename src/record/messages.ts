/**
 * The record's copies of the messages the relay captured (`exchange/capture.ts`): the headers the
 * backend received and the client sent, as on the wire, and the kept bodies with the client's token
 * redacted.
 *
 * @module
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { BackendMessage, BodyCapture } from '../exchange/capture.js';
import { REDACTED } from './redact.js';
import type { RecordedBody } from './types.js';

/** The headers the backend received: `host`, then the relay's, several values joined as on the wire. */
export function sentHeaders(message: BackendMessage, names: ReadonlyMap<string, string>): Record<string, string> {
  const out: Record<string, string> = { [names.get('host') ?? 'host']: message.host };
  for (const name of Object.keys(message.headers)) {
    const value = message.headers[name]!;
    out[names.get(name) ?? name] = typeof value === 'string' ? value : value.join(name === 'cookie' ? '; ' : ', ');
  }
  return out;
}

/** The headers as the client sent them (names in their case, repeated ones joined), from `rawHeaders`. */
export function receivedHeaders(raw: readonly string[] | undefined, fallback: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined || raw.length === 0) {
    for (const name of Object.keys(fallback)) {
      const value = fallback[name];
      if (value !== undefined) out[name] = typeof value === 'string' ? value : value.join(', ');
    }
    return out;
  }
  const seen = new Map<string, string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    const first = seen.get(lower);
    if (first === undefined) {
      seen.set(lower, name);
      out[name] = raw[i + 1]!;
    } else {
      out[first] += `${lower === 'cookie' ? '; ' : ', '}${raw[i + 1]!}`;
    }
  }
  return out;
}

const TEXTUAL = /^(?:text\/|application\/(?:[\w.+-]*\+)?(?:json|xml|x-www-form-urlencoded|javascript|ecmascript|graphql|yaml|x-yaml)\b)/i;
const FORM = /^application\/x-www-form-urlencoded\b/i;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Every occurrence of `needle` in `haystack` replaced by `[redacted]`. */
function replaceBytes(haystack: Buffer, needle: Buffer): Buffer {
  let at = haystack.indexOf(needle);
  if (at === -1) return haystack;
  const parts: Buffer[] = [];
  let from = 0;
  const marker = Buffer.from(REDACTED);
  while (at !== -1) {
    parts.push(haystack.subarray(from, at), marker);
    from = at + needle.length;
    at = haystack.indexOf(needle, from);
  }
  parts.push(haystack.subarray(from));
  return Buffer.concat(parts);
}

/** `bytes` without a last part that starts the token (a token cut by the limit is still a token's part). */
function withoutTokenStart(bytes: Buffer, token: Buffer): Buffer {
  for (let n = Math.min(token.length - 1, bytes.length); n >= 8; n--) {
    if (bytes.subarray(bytes.length - n).equals(token.subarray(0, n)))
      return Buffer.concat([bytes.subarray(0, bytes.length - n), Buffer.from(REDACTED)]);
  }
  return bytes;
}

/** Text of UTF-8 bytes, allowing a character cut by the limit at the end; `undefined` when they are not UTF-8. */
function decodeText(bytes: Buffer, cut: boolean): string | undefined {
  for (let drop = 0; drop <= (cut ? 3 : 0) && drop <= bytes.length; drop++) {
    try {
      return utf8.decode(bytes.subarray(0, bytes.length - drop));
    } catch {
      // try without the last bytes of a cut character
    }
  }
  return undefined;
}

/**
 * The record's copy of a captured body: text for a textual content type that is UTF-8, else base64;
 * the client's token (and a form body's `access_token`) replaced by `[redacted]`.
 */
export function recordedBody(capture: BodyCapture, secret: string | undefined): RecordedBody {
  let bytes = capture.bytes();
  const truncated = capture.size > capture.kept;
  if (secret !== undefined && secret !== '') {
    const token = Buffer.from(secret);
    bytes = replaceBytes(bytes, token);
    if (truncated) bytes = withoutTokenStart(bytes, token);
  }
  const type = capture.contentType;
  let text = type === undefined || TEXTUAL.test(type) ? decodeText(bytes, truncated) : undefined;
  if (text !== undefined && type !== undefined && FORM.test(type)) text = text.replace(/(^|&)(access_token=)[^&]*/g, `$1$2${REDACTED}`);
  const body: RecordedBody =
    text === undefined
      ? { size: capture.size, kept: capture.kept, encoding: 'base64', content: bytes.toString('base64') }
      : { size: capture.size, kept: capture.kept, encoding: 'utf8', content: text };
  if (type !== undefined) body.contentType = type;
  if (truncated) body.truncated = true;
  return body;
}

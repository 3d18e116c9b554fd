/**
 * A stock Python `wsgiref` backend, as CGI/WSGI-style servers behave: it answers every request
 * with its WSGI environ's `HTTP_*` variables, `PATH_INFO` (percent-decoded, as WSGI servers give
 * it) and `QUERY_STRING`, as JSON.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const SCRIPT = String.raw`
import json, sys
from wsgiref.simple_server import make_server, WSGIRequestHandler

def app(environ, start_response):
    seen = {k: v for k, v in environ.items() if k.startswith('HTTP_')}
    seen['PATH_INFO'] = environ.get('PATH_INFO', '')
    seen['QUERY_STRING'] = environ.get('QUERY_STRING', '')
    body = json.dumps(seen).encode()
    start_response('200 OK', [('Content-Type', 'application/json'), ('Content-Length', str(len(body)))])
    return [body]

class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass

server = make_server('127.0.0.1', 0, app, handler_class=Quiet)
print(server.server_port, flush=True)
server.serve_forever()
`;

/** What the WSGI backend saw of one request. */
export type WsgiSeen = Record<string, string>;

/** A running WSGI backend. */
export interface WsgiBackend {
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts the backend on an ephemeral loopback port. */
export function startWsgiBackend(): Promise<WsgiBackend> {
  const child: ChildProcess = spawn('python3', ['-c', SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`python3 wsgiref backend exited (${code}) before listening`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const line = /^(\d+)\n/.exec(out);
      if (line === null) return;
      child.removeAllListeners('exit');
      resolve({
        url: `http://127.0.0.1:${line[1]}`,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null) return done();
            child.once('exit', () => done());
            child.kill();
          }),
      });
    });
  });
}

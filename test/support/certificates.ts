/**
 * A throwaway PKI made at test time with the `openssl` command: a CA, a server certificate for
 * 127.0.0.1 and localhost, client certificates it signs, and a self-signed client certificate it
 * does not. Everything lives in a temporary folder removed by `remove()`.
 */
import { execFile } from 'node:child_process';
import { X509Certificate, createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A certificate and its key, as files and as PEM text. */
export interface Issued {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
  /** `x5t#S256`: SHA-256 of the DER, base64url. */
  readonly thumbprint: string;
}

export interface TestPki {
  readonly dir: string;
  readonly ca: Issued;
  readonly server: Issued;
  /** Issues another certificate signed by the CA (`client` for clientAuth, `server` for 127.0.0.1). */
  issue(name: string, usage: 'client' | 'server'): Promise<Issued>;
  /** A self-signed client certificate (no CA signed it). */
  selfSigned(name: string): Promise<Issued>;
  remove(): Promise<void>;
}

const KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

async function issued(dir: string, name: string): Promise<Issued> {
  const certFile = path.join(dir, `${name}.pem`);
  const keyFile = path.join(dir, `${name}.key`);
  const cert = await readFile(certFile, 'utf8');
  const thumbprint = createHash('sha256').update(new X509Certificate(cert).raw).digest('base64url');
  return { certFile, keyFile, cert, key: await readFile(keyFile, 'utf8'), thumbprint };
}

/** Makes the CA and the server certificate in a new temporary folder. */
export async function createTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(path.join(tmpdir(), 'gateway-pki-'));
  const file = (name: string) => path.join(dir, name);
  await run('openssl', [
    'req',
    '-x509',
    ...KEY,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=Gateway Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const issue = async (name: string, usage: 'client' | 'server'): Promise<Issued> => {
    await run('openssl', ['req', ...KEY, '-keyout', file(`${name}.key`), '-out', file(`${name}.csr`), '-subj', `/CN=${name}`]);
    const extensions =
      usage === 'server' ? 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' : 'extendedKeyUsage=clientAuth\n';
    await writeFile(file(`${name}.ext`), extensions);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-out',
      file(`${name}.pem`),
      '-days',
      '2',
      '-extfile',
      file(`${name}.ext`),
    ]);
    return issued(dir, name);
  };
  const selfSigned = async (name: string): Promise<Issued> => {
    await run('openssl', [
      'req',
      '-x509',
      ...KEY,
      '-keyout',
      file(`${name}.key`),
      '-out',
      file(`${name}.pem`),
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
    ]);
    return issued(dir, name);
  };
  const ca = await issued(dir, 'ca');
  const server = await issue('server', 'server');
  return { dir, ca, server, issue, selfSigned, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * The file configuration store writes a saved version into the configuration file without
 * reformatting it: a hand-formatted file (its own indentation, key order, blank lines, inline
 * objects) keeps every byte outside the fields that changed.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { GatewayConfig } from '../../src/config/types.js';
import { FileConfigStore } from '../../src/configuration/store.js';

const EXAMPLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'petstore');

// The petstore example as someone formatted it by hand: 4 spaces, a blank line, keys in their own order.
const HAND_FORMATTED = `{
    "apis": [
        {
            "name": "PetStore",   "provider": "Ente",
            "version": 1,

            "backend": { "timeoutMs": 10000, "url": "http://127.0.0.1:9001" },
            "operations": [
                { "name": "addPet", "method": "POST", "path": "/pet" },
                { "name": "updatePet", "method": "PUT", "path": "/pet" }
            ],
            "tokenManagement": { "enabled": true, "policy": "DemoIdP", "introspection": true },
            "authorization": { "mode": "xacml-Policy", "policy": "policies/petstore.xml" }
        }
    ],

    "tokenPolicies": {
        "DemoIdP": { "issuer": "http://127.0.0.1:9000", "clientId": "gateway", "clientSecret": "gateway-secret" }
    }
}
`;

describe('file configuration store: the file keeps its own formatting', () => {
  let dir: string;
  let file: string;
  let policy: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'eag-store-'));
    file = path.join(dir, 'gateway.config.json');
    await mkdir(path.join(dir, 'policies'));
    await copyFile(path.join(EXAMPLE, 'policies', 'petstore.xml'), path.join(dir, 'policies', 'petstore.xml'));
    policy = await readFile(path.join(dir, 'policies', 'petstore.xml'), 'utf8');
    await writeFile(file, HAND_FORMATTED);
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a policy saved: the configuration file is byte for byte the same', async () => {
    const store = new FileConfigStore(file);
    const current = await store.current();
    const text = policy.replace('</Policy>', '<!-- client3 --></Policy>');
    const saved = await store.save(
      { document: current.document, policies: { 'policies/petstore.xml': text } },
      { author: 'ada', comment: '' },
    );
    expect(saved.version).to.equal(2);
    expect(await readFile(file, 'utf8')).to.equal(HAND_FORMATTED);
    expect(await readFile(path.join(dir, 'policies', 'petstore.xml'), 'utf8')).to.equal(text);
  });

  it('a field changed: only its value is rewritten, and no change outside the console is recorded', async () => {
    const store = new FileConfigStore(file);
    const current = await store.current();
    // The proposal in the console's own key order (as the API sends it), one value changed.
    const document = JSON.parse(JSON.stringify(current.document)) as GatewayConfig;
    document.apis[0]!.backend.timeoutMs = 5000;
    const reordered = { tokenPolicies: document.tokenPolicies, apis: document.apis } as GatewayConfig;
    await store.save({ document: reordered }, { author: 'ada', comment: 'shorter timeout' });
    const expected = HAND_FORMATTED.replace('"timeoutMs": 10000', '"timeoutMs": 5000');
    expect(expected).to.not.equal(HAND_FORMATTED);
    expect(await readFile(file, 'utf8')).to.equal(expected);
    // Removed and added fields change only their own members.
    const next = JSON.parse(JSON.stringify(document)) as GatewayConfig;
    delete (next.apis[0]!.backend as { timeoutMs?: number }).timeoutMs;
    await store.save({ document: next }, { author: 'ada', comment: 'default timeout' });
    expect(await readFile(file, 'utf8')).to.equal(expected.replace('{ "timeoutMs": 5000, "url"', '{ "url"'));
    const versions = await store.list();
    expect(versions.map((v) => `${v.version} ${v.author}`)).to.deep.equal(['3 ada', '2 ada', '1 (outside the console)']);
  });
});

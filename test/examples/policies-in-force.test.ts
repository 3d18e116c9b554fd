/**
 * The XACML policies `npm start`'s banner names: those of the configuration in force, whichever
 * file GATEWAY_CONFIG points at.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { policiesInForce } from '../../examples/petstore/policies-in-force.js';
import { repoRoot } from '../gateway/helpers.js';

describe('npm start: the policies in force', () => {
  it('names the policy of the configuration given, not the example one', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gateway-banner-'));
    try {
      const example = path.join(repoRoot, 'examples', 'petstore');
      await mkdir(path.join(dir, 'rules'));
      await copyFile(path.join(example, 'policies', 'petstore.xml'), path.join(dir, 'rules', 'pets.xml'));
      const config = JSON.parse(await readFile(path.join(example, 'gateway.config.json'), 'utf8')) as Record<string, unknown> & {
        apis: Array<{ authorization: { policy: string } }>;
      };
      delete config['$schema'];
      config.apis[0]!.authorization.policy = 'rules/pets.xml';
      const file = path.join(dir, 'gateway.config.json');
      await writeFile(file, JSON.stringify(config));
      expect(await policiesInForce(file)).to.deep.equal([{ api: 'Ente/PetStore/v1', file: path.join(dir, 'rules', 'pets.xml') }]);
      expect(await policiesInForce(path.join(example, 'gateway.config.json'))).to.deep.equal([
        { api: 'Ente/PetStore/v1', file: path.relative(process.cwd(), path.join(example, 'policies', 'petstore.xml')) },
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The published JSON Schema of the configuration file (`config.schema.json`): generated from the
 * features' schemas, equal to the committed copy the example points at, and read the same way by
 * an independent validator (ajv, as editors use) as by the gateway.
 */
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { Ajv } from 'ajv';
import { configJsonSchema, configJsonSchemaText } from '../../src/config/json-schema.js';

const ROOT = new URL('../../', import.meta.url);

function validator() {
  // errorMessage: the project's wording of an error, which editors show too (not a check).
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  ajv.addKeyword('errorMessage');
  return ajv.compile(configJsonSchema());
}

describe('config.schema.json', () => {
  it('the committed copy is the generated one (npm run config-schema writes it)', async () => {
    expect(await readFile(new URL('config.schema.json', ROOT), 'utf8')).to.equal(configJsonSchemaText());
  });

  it('the build publishes it as express-access-gateway/config.schema.json', async () => {
    const pkg = JSON.parse(await readFile(new URL('package.json', ROOT), 'utf8')) as { exports: Record<string, unknown> };
    expect(pkg.exports['./config.schema.json']).to.equal('./dist/config.schema.json');
    expect(await readFile(new URL('dist/config.schema.json', ROOT), 'utf8')).to.equal(configJsonSchemaText());
  });

  it('the example points at it and validates; a misspelt key is refused', async () => {
    const example = JSON.parse(await readFile(new URL('examples/petstore/gateway.config.json', ROOT), 'utf8')) as {
      $schema: string;
      apis: Array<Record<string, unknown>>;
    };
    expect(new URL(example.$schema, new URL('examples/petstore/', ROOT)).href).to.equal(new URL('config.schema.json', ROOT).href);
    const validate = validator();
    expect(validate(example), JSON.stringify(validate.errors)).to.equal(true);
    const misspelt = structuredClone(example);
    misspelt.apis[0]!.tokenManagment = misspelt.apis[0]!.tokenManagement;
    delete misspelt.apis[0]!.tokenManagement;
    expect(validate(misspelt)).to.equal(false);
    expect(validate.errors).to.deep.include.members([
      {
        instancePath: '/apis/0',
        schemaPath: '#/properties/apis/items/additionalProperties',
        keyword: 'additionalProperties',
        params: { additionalProperty: 'tokenManagment' },
        message: 'must NOT have additional properties',
      },
    ]);
  });
});

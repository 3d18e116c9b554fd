#!/usr/bin/env node
/**
 * `xacml-eval --policy P.xml [--policy P2.xml ...] [--reference R.xml ...] --request Q.xml`:
 * evaluates one request against the policies and prints the XACML 2.0 response XML.
 * Exit code 0 when a response was printed; 2 for bad usage, an unreadable file or an invalid
 * policy/request (XacmlSyntaxError), with the reason on stderr (and the usage, for bad usage only).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { XacmlSyntaxError } from './errors.js';
import { createPdp } from './pdp.js';
import { parseRequest } from './request.js';
import { toResponseXml } from './response.js';

const USAGE = 'Usage: xacml-eval --policy P.xml [--policy P2.xml ...] [--reference R.xml ...] --request Q.xml';

function fail(message: string, usage = false): never {
  process.stderr.write(`xacml-eval: ${message}\n${usage ? `${USAGE}\n` : ''}`);
  process.exit(2);
}

function read(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    fail(`cannot read ${file}: ${(e as Error).message}`);
  }
}

function main(argv: string[]): void {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        policy: { type: 'string', multiple: true },
        reference: { type: 'string', multiple: true },
        request: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    fail((e as Error).message, true);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (!values.policy?.length) fail('missing --policy', true);
  if (!values.request) fail('missing --request', true);
  const policies = values.policy.map(read);
  const references = (values.reference ?? []).map(read);
  const requestXml = read(values.request);
  try {
    const pdp = createPdp({ policies, references });
    const request = parseRequest(requestXml);
    process.stdout.write(toResponseXml(pdp.evaluate(request)));
  } catch (e) {
    if (e instanceof XacmlSyntaxError) fail(`invalid XACML: ${e.message}`);
    throw e;
  }
}

main(process.argv.slice(2));

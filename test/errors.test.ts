/**
 * docs/errors.md lists the catalogue of src/errors.ts row by row: this test keeps the two equal, so
 * that a code added, changed or removed in one is seen in the other.
 */
import { readFile } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { errorCatalogue, messagesEn, messagesIt, outcomeLabels, renderMessage, type GatewayErrorCode } from '../src/errors.js';

const docsFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'errors.md');

/** The rows of the catalogue table: code → cells. */
async function documentedRows(): Promise<Map<string, string[]>> {
  const text = await readFile(docsFile, 'utf8');
  const table = text.slice(text.indexOf('## The catalogue'));
  const rows = new Map<string, string[]>();
  for (const line of table.split('\n')) {
    if (!line.startsWith('| `ERR_')) continue;
    // No cell of the table holds a `|` of its own.
    const [code, ...cells] = line
      .slice(1, -1)
      .split('|')
      .map((cell) => cell.trim());
    rows.set(code!.replaceAll('`', ''), cells);
  }
  return rows;
}

/** A detail as the docs write it: template parameters as `<name>` placeholders. */
function documentedDetail(set: typeof messagesIt, code: GatewayErrorCode): string {
  const detail = renderMessage(set, code, {
    serviceName: '<api>',
    serviceVersion: '<n>',
    providerName: '<provider>',
    decisionText: '<decision>',
  });
  return detail.replace(/<(api|n|provider|decision)>/g, '`<$1>`');
}

describe('docs/errors.md', () => {
  it('lists every code of the catalogue, and no other', async () => {
    const rows = await documentedRows();
    expect([...rows.keys()].sort()).to.deep.equal(Object.keys(errorCatalogue).sort());
  });

  for (const [code, definition] of Object.entries(errorCatalogue) as Array<[GatewayErrorCode, (typeof errorCatalogue)[GatewayErrorCode]]>) {
    it(`documents ${code} as the catalogue defines it`, async () => {
      const cells = (await documentedRows()).get(code);
      expect(cells, code).to.be.an('array');
      const [status, title, gatewayStatus, it, en, challenge, retryAfter] = cells!;
      expect(Number(status)).to.equal(definition.status);
      expect(title).to.equal(STATUS_CODES[definition.status]);
      expect(gatewayStatus).to.equal(`\`${definition.gatewayStatus}\``);
      expect(it).to.equal(documentedDetail(messagesIt, code));
      expect(en).to.equal(documentedDetail(messagesEn, code));
      // The DPoP errors are told only in a DPoP challenge (RFC 9449 section 7.1), with its `algs`.
      const dpopOnly = definition.challenge?.error === 'invalid_dpop_proof' || definition.challenge?.error === 'use_dpop_nonce';
      const expectedChallenge =
        definition.challenge === undefined
          ? ''
          : dpopOnly
            ? `\`DPoP realm="<policy>", algs="<algs>", error="${definition.challenge.error}", error_description="${definition.challenge.description}"\``
            : `\`Bearer realm="<policy>", error="${definition.challenge.error}", error_description="${definition.challenge.description}"\``;
      expect(challenge).to.equal(expectedChallenge);
      expect(retryAfter).to.equal(definition.retryAfter === undefined ? '' : String(definition.retryAfter));
    });
  }
});

describe('docs/console.md outcomes', () => {
  it('lists every outcome code with its Italian and English labels, and no other', async () => {
    const text = await readFile(path.resolve(path.dirname(docsFile), 'console.md'), 'utf8');
    const table = text.slice(text.indexOf('### Outcomes'));
    const rows = new Map<string, string[]>();
    for (const line of table.split('\n')) {
      if (rows.size > 0 && !line.startsWith('|')) break;
      const match = /^\| `([A-Z_0-9]+)` \|/.exec(line);
      if (match !== null)
        rows.set(
          match[1]!,
          line
            .slice(1, -1)
            .split('|')
            .map((cell) => cell.trim()),
        );
    }
    expect([...rows.keys()].sort()).to.deep.equal(Object.keys(outcomeLabels).sort());
    for (const [code, labels] of Object.entries(outcomeLabels)) expect(rows.get(code)!.slice(1, 3)).to.deep.equal([labels.it, labels.en]);
  });
});

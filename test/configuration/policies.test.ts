/**
 * XACML policies through the configuration API: an upload is validated as the gateway compiles
 * it (syntax and compile errors with the element's path and line; nothing saved), a valid one is a
 * new version, in force only after ResetAllCaches: client3's 403 becomes 200 then.
 */
import { readdir, readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { diffLines } from '../../src/configuration/diff.js';
import { lineOfElement, policyIssues } from '../../src/configuration/policy-check.js';
import { OperatorClient, PASSWORDS, startPetstore, withClient3, type PetstoreGateway } from './helpers.js';

const POLICY = '/gateway/configuration/api/apis/Ente/PetStore/1/policy';

describe('XACML policies in the configuration API', function () {
  this.timeout(60_000);
  let pet: PetstoreGateway;
  let ada: OperatorClient;
  let original: string;

  before(async () => {
    pet = await startPetstore();
    ada = new OperatorClient(pet.server.adminUrl!);
    await ada.signIn('ada', PASSWORDS.ada);
    original = await readFile(pet.copy.policyFile, 'utf8');
  });
  after(() => pet?.stop());

  const versions = async () => (await readdir(`${pet.copy.configFile}.versions`)).length;

  it('serves the policy text of an API', async () => {
    const res = await ada.fetch(POLICY);
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ file: 'policies/petstore.xml', text: original });
  });

  it('refuses a policy that does not compile: 422 with the element path and its line, nothing saved', async () => {
    const before = await versions();
    const broken = original.replace(
      'function:string-at-least-one-member-of">\n          <SubjectAttributeDesignator',
      'function:string-no-such-function">\n          <SubjectAttributeDesignator',
    );
    expect(broken).not.to.equal(original);
    const res = await ada.json(POLICY, 'PUT', { text: broken, comment: 'typo' });
    expect(res.status).to.equal(422);
    const { issues } = (await res.json()) as {
      issues: Array<{ path: string; file: string; element: string; line: number; message: string }>;
    };
    expect(issues).to.have.length(1);
    expect(issues[0]!.path).to.equal('apis[0].authorization.policy');
    expect(issues[0]!.file).to.equal('policies/petstore.xml');
    expect(issues[0]!.message).to.include('string-no-such-function');
    expect(issues[0]!.element).to.equal('/Policy[@PolicyId="urn:gateway:policy:petstore"]/Rule[@RuleId="ok"]/Condition/Apply[1]/Apply[2]');
    const line = broken.split('\n').findIndex((l) => l.includes('string-no-such-function')) + 1;
    expect(issues[0]!.line).to.equal(line);
    expect(await readFile(pet.copy.policyFile, 'utf8')).to.equal(original);
    expect(await versions()).to.equal(before);
  });

  it('refuses malformed XML with its line, and a DOCTYPE, nothing saved', async () => {
    const before = await versions();
    const malformed = original.replace('<Rule RuleId="ko" Effect="Deny"/>', '<Rule RuleId="ko" Effect="Deny">');
    const res = await ada.json(POLICY, 'PUT', { text: malformed });
    expect(res.status).to.equal(422);
    const issue = ((await res.json()) as { issues: Array<{ line: number; message: string }> }).issues[0]!;
    expect(issue.message).to.match(/^Malformed XML/);
    expect(issue.line).to.be.a('number');
    const doctype = await ada.json(POLICY, 'PUT', { text: `<!DOCTYPE x [<!ENTITY a "b">]>${original.slice(original.indexOf('<Policy'))}` });
    expect(doctype.status).to.equal(422);
    expect(((await doctype.json()) as { issues: Array<{ message: string }> }).issues[0]!.message).to.equal(
      'DOCTYPE declarations are not allowed',
    );
    expect(await readFile(pet.copy.policyFile, 'utf8')).to.equal(original);
    expect(await versions()).to.equal(before);
  });

  it('checks a draft without saving it', async () => {
    const ok = await ada.json('/gateway/configuration/api/policies/check', 'POST', { text: withClient3(original) });
    expect(await ok.json()).to.deep.equal({ valid: true, issues: [] });
    const bad = await ada.json('/gateway/configuration/api/policies/check', 'POST', {
      text: '<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os"/>',
    });
    const body = (await bad.json()) as { valid: boolean; issues: Array<{ message: string }> };
    expect(body.valid).to.equal(false);
    expect(body.issues[0]!.message).to.match(/PolicyId|RuleCombiningAlgId/);
  });

  it('saves a valid upload as a new version, in force only after ResetAllCaches: client3 403, then 200', async () => {
    expect((await pet.putPetAs('client3')).status).to.equal(403);
    const before = await versions();
    const res = await ada.json(POLICY, 'PUT', { text: withClient3(original), comment: 'let client3 in' });
    expect(res.status).to.equal(200);
    const saved = (await res.json()) as { version: { version: number; comment: string } };
    expect(saved.version.comment).to.equal('let client3 in');
    expect(await versions()).to.equal(before + 1);
    expect(await readFile(pet.copy.policyFile, 'utf8')).to.include('>client3<');
    expect((await pet.putPetAs('client3')).status, 'saved, not yet in force').to.equal(403);
    const state = (await (await ada.fetch('/gateway/configuration/api/state')).json()) as { nodes: Array<{ state: string }> };
    expect(state.nodes[0]!.state).to.equal('saved, not yet in force');
    expect((await ada.fetch('/gateway/admin/reset-caches', { method: 'POST' })).status).to.equal(200);
    expect((await pet.putPetAs('client3')).status).to.equal(200);
    // The diff of the two versions is the one added line.
    const diff = (await (
      await ada.fetch(`/gateway/configuration/api/diff?from=${saved.version.version - 1}&to=${saved.version.version}`)
    ).json()) as {
      files: Array<{ file: string; lines: Array<{ op: string; text: string; newLine?: number }> }>;
    };
    expect(diff.files.map((f) => f.file)).to.deep.equal(['policies/petstore.xml']);
    expect(diff.files[0]!.lines.filter((l) => l.op !== ' ').map((l) => `${l.op}${l.text.trim()}`)).to.deep.equal([
      '+<AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client3</AttributeValue>',
    ]);
  });

  it('rolls the policy back with its version, in force after the next reset', async () => {
    const res = await ada.json('/gateway/configuration/api/versions/1/rollback', 'POST', { comment: 'client3 out again' });
    expect(res.status).to.equal(200);
    expect(await readFile(pet.copy.policyFile, 'utf8')).to.equal(original);
    expect((await pet.putPetAs('client3')).status).to.equal(200);
    await ada.fetch('/gateway/admin/reset-caches', { method: 'POST' });
    expect((await pet.putPetAs('client3')).status).to.equal(403);
  });
});

describe('policy locations and line differences', () => {
  const xml = [
    '<Policy PolicyId="p" RuleCombiningAlgId="x">',
    '  <Target/>',
    '  <Rule RuleId="a" Effect="Permit">',
    '    <Condition>',
    '      <Apply FunctionId="f"/>',
    '      <Apply FunctionId="g">',
    '      </Apply>',
    '    </Condition>',
    '  </Rule>',
    '</Policy>',
  ].join('\n');

  it('finds the line of an element path as the evaluator writes it, or the deepest element on the way', () => {
    expect(lineOfElement(xml, '/Policy[@PolicyId="p"]')).to.equal(1);
    expect(lineOfElement(xml, '/Policy[@PolicyId="p"]/Rule[@RuleId="a"]/Condition/Apply[2]')).to.equal(6);
    expect(lineOfElement(xml, '/Policy[@PolicyId="p"]/Rule[@RuleId="a"]/Condition/Apply[9]')).to.equal(4);
    expect(lineOfElement(xml, '/PolicySet[1]')).to.equal(undefined);
    expect(lineOfElement(xml, '')).to.equal(undefined);
  });

  it('reports an empty policy and a missing attribute', () => {
    expect(policyIssues('', [], 'f.xml', 'p')[0]!.message).to.be.a('string');
    expect(policyIssues('<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os"/>', [], 'f.xml', 'p')[0]!).to.include({
      path: 'p',
      file: 'f.xml',
    });
  });

  it('diffs lines with their numbers and only the context around changes', () => {
    const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].join('\n');
    const after = ['a', 'b', 'c', 'd', 'E', 'f', 'g', 'h', 'i', 'j'].join('\n');
    expect(diffLines(before, after, 1)).to.deep.equal([
      { op: ' ', text: 'd', oldLine: 4, newLine: 4 },
      { op: '-', text: 'e', oldLine: 5 },
      { op: '+', text: 'E', newLine: 5 },
      { op: ' ', text: 'f', oldLine: 6, newLine: 6 },
      { op: ' ', text: 'i', oldLine: 9, newLine: 9 },
      { op: '+', text: 'j', newLine: 10 },
    ]);
    expect(diffLines('same', 'same')).to.deep.equal([]);
  });
});

/**
 * Finding 6 (operators' work): checking a policy (any viewer), importing an OpenAPI document,
 * running a what-if or validating a save compiles and parses documents that an operator or a
 * vendor wrote, for seconds of CPU. Played over real HTTP against `serve` (the built command,
 * the example's configuration, a real authorization server and backend): the gateway's own
 * event-loop delay over the work (support/loop-delay.ts) bounds what an unrelated API call waits,
 * and an unrelated API call with a valid token is measured meanwhile. The control: the same check
 * run on the event loop of a gateway process is caught by the same measure. Then the bounds of
 * that work (size, time, queue) against a gateway given tight bounds.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { doggie } from '../../examples/petstore/backend.js';
import type { GatewayConfig } from '../../src/index.js';
import {
  expectDelayed,
  expectNotDelayed as expectLoopNotDelayed,
  latencyDuring,
  type LatencyReport,
} from '../authorize/helpers/gateway-process.js';
import { startPetstore, type PetstoreGateway } from '../configuration/helpers.js';
import { editJson, exampleCopy, openConfig } from '../gateway/helpers.js';
import { ADMIN_PASSWORD, OperatorClient, PASSWORDS, testUsers } from '../operators/helpers.js';
import { stop, type Served } from '../server/support.js';
import { doublingRefsOpenApi, manyOperationsOpenApi, PERMIT_ALL, regexHeavyPolicy } from './support/operator-documents.js';
import { backendProcess, type BackendProcess } from './support/backend-process.js';
import { loopMonitorEnv, type LoopDelaySource, type LoopMonitorEnv } from './support/loop-delay.js';
import { recordedGateway, type RecordedGateway } from './support/recorded-gateway-process.js';
import { serveOnFreePorts } from './support/serve-ports.js';

const API = '/gateway/configuration/api';
const CHECK = `${API}/policies/check`;
const PETSTORE = `${API}/apis/Ente/PetStore/1`;
/** The most the gateway's event loop may be held (an unrelated API call wait for it) while an operator's work runs. */
const BOUND_MS = 100;

interface Answer {
  status: number;
  retryAfter?: string | null;
  body: Record<string, unknown>;
}

async function answerOf(res: Response): Promise<Answer> {
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> };
}

/** The attack's answer as JSON (the report keeps it as text). */
function attackAnswer(report: LatencyReport): Answer {
  expect(report.attack, 'the operator got an answer').to.have.property('status');
  const { status, body } = report.attack as { status: number; body: string };
  return { status, body: JSON.parse(body) as Record<string, unknown> };
}

function expectNotDelayed(report: LatencyReport): void {
  expectLoopNotDelayed(report, BOUND_MS);
  expect(new Set(report.statuses), 'the unrelated calls were relayed').to.deep.equal(new Set([200]));
}

/** The answer of a job stopped at its time budget, as the operator reads it. */
function expectOverBudget(answer: Answer, budget: string): void {
  expect(answer.status).to.equal(422);
  expect(answer.body).to.include({ status: 422, gateway_status: 'protocol:GATEWAY-422', code: 'ERR_OPERATOR_WORK_OVER_BUDGET' });
  expect(String(answer.body['detail'])).to.include(budget);
}

describe("security: operators' work never stalls the APIs (finding 6)", function () {
  this.timeout(240_000);

  describe('serve: the heavy work of every role, while an API call is measured', () => {
    let as: DemoAuthServer;
    let backend: BackendProcess;
    let copy: Awaited<ReturnType<typeof exampleCopy>>;
    let served: Served;
    let probe: string;
    let vera: OperatorClient;
    let ada: OperatorClient;
    let monitor: LoopMonitorEnv;
    let loopDelay: LoopDelaySource;
    const heavy = regexHeavyPolicy();

    before(async () => {
      as = await startDemoAuthServer({ port: 0 });
      // In a process of its own: a collection pause of the test runner is not the gateway's delay.
      backend = await backendProcess('petstore');
      copy = await exampleCopy();
      await editJson<GatewayConfig>(copy.configFile, (config) => {
        config.tokenPolicies!.DemoIdP!.issuer = as.issuer;
        config.apis[0]!.backend.url = backend.url;
        // Every decision keeps its request: the what-if evaluates all of them.
        config.apis[0]!.recording = { ...config.apis[0]!.recording, xacmlRequests: 'all' };
      });
      const usersFile = path.join(copy.dir, 'users.json');
      await writeFile(usersFile, JSON.stringify({ users: await testUsers() }));
      // The gateway's own measure of its event loop (support/loop-delay.ts).
      monitor = await loopMonitorEnv();
      let base: string;
      let admin: string;
      ({
        served,
        api: base,
        admin,
      } = await serveOnFreePorts(['serve', '--config', copy.configFile, '--users', usersFile], {
        ADMIN_PASSWORD,
        ...monitor.env,
      }));
      loopDelay = await monitor.source();
      const token = await as.issueToken('client1', 'client1-secret');
      const api = `${base}/gateway/Ente/PetStore/v1`;
      const put = await fetch(`${api}/pet?access_token=${encodeURIComponent(token)}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(doggie),
      });
      expect(put.status).to.equal(200);
      probe = `${api}/pet/${doggie.id}?access_token=${encodeURIComponent(token)}`;
      vera = new OperatorClient(admin);
      ada = new OperatorClient(admin);
      expect((await vera.signIn('vera', PASSWORDS.vera)).status).to.equal(200);
      expect((await ada.signIn('ada', PASSWORDS.ada)).status).to.equal(200);
      // Some traffic for the what-if to replay.
      for (let i = 0; i < 20; i++) expect((await fetch(probe)).status).to.equal(200);
    });
    after(async () => {
      await stop(served);
      await monitor?.remove();
      await backend?.stop();
      await as?.stop();
      await copy?.remove();
    });

    const post =
      (client: () => OperatorClient, route: string, body: unknown, method = 'POST') =>
      (signal: AbortSignal) =>
        client().fetch(route, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, signal });

    it("a viewer's check of a policy of 6,000 large regular expressions: checked, and the API call waits at most 100 ms", async () => {
      const report = await latencyDuring(
        post(() => vera, CHECK, { text: heavy }),
        probe,
        { patienceMs: 120_000, loopDelay },
      );
      const answer = attackAnswer(report);
      // On a crowded machine the compilation may go past the budget: the operator is told so.
      if (answer.status === 422) expectOverBudget(answer, '10000 ms');
      else expect(answer).to.deep.include({ status: 200, body: { valid: true, issues: [] } });
      expectNotDelayed(report);
    });

    it("an admin's dry-run save of that policy (every policy of the document compiled): refused, since ResetAllCaches would compile it on the APIs' thread; the API call waits at most 100 ms", async () => {
      const report = await latencyDuring(
        post(() => ada, `${PETSTORE}/policy`, { text: heavy, dryRun: true }, 'PUT'),
        probe,
        { patienceMs: 120_000, loopDelay },
      );
      const answer = attackAnswer(report);
      expect(answer.status).to.equal(422);
      if (answer.body['code'] === 'ERR_OPERATOR_WORK_OVER_BUDGET') expectOverBudget(answer, '10000 ms');
      else
        expect(String(answer.body['detail'])).to.match(
          /compiling this policy took \d+ ms; .* at most 100 ms \(operatorWork\.maxCompileMs\)/,
        );
      expectNotDelayed(report);
    });

    it("an admin's what-if of that policy against the recorded calls: the API call waits at most 100 ms", async () => {
      const report = await latencyDuring(
        post(() => ada, `${PETSTORE}/policy/what-if`, { text: heavy, limit: 2000 }),
        probe,
        { patienceMs: 120_000, loopDelay },
      );
      const answer = attackAnswer(report);
      if (answer.status === 422) expectOverBudget(answer, '10000 ms');
      else {
        expect(answer.status).to.equal(200);
        expect(answer.body['evaluated']).to.be.at.least(20);
      }
      expectNotDelayed(report);
    });

    it("an admin's import of a 4 KB OpenAPI document whose references double 32 times: refused, and the API call waits at most 100 ms", async () => {
      const report = await latencyDuring(
        post(() => ada, `${PETSTORE}/operations/openapi`, { text: doublingRefsOpenApi(), dryRun: true }),
        probe,
        { patienceMs: 120_000, loopDelay },
      );
      const answer = attackAnswer(report);
      expect(answer.status).to.equal(422);
      if (answer.body['code'] !== 'ERR_OPERATOR_WORK_OVER_BUDGET')
        expect(String(answer.body['detail'])).to.match(/^the OpenAPI document: /);
      expectNotDelayed(report);
    });

    it("an admin's import of a 1.5 MB OpenAPI document of 6,000 operations: the API call waits at most 100 ms", async () => {
      const report = await latencyDuring(
        post(() => ada, `${PETSTORE}/operations/openapi`, { text: manyOperationsOpenApi(), dryRun: true }),
        probe,
        { patienceMs: 120_000, loopDelay },
      );
      const answer = attackAnswer(report);
      if (answer.status === 422) expectOverBudget(answer, '10000 ms');
      else expect(answer.body['changes']).to.have.property('added').with.length(6000);
      expectNotDelayed(report);
    });

    it('a policy or an OpenAPI document past its size is refused with 413, naming the size', async () => {
      const big = `${PERMIT_ALL}<!--${'x'.repeat(2 * 1024 * 1024)}-->`;
      const checked = await answerOf(await vera.json(CHECK, 'POST', { text: big }));
      expect(checked.status).to.equal(413);
      expect(checked.body['detail']).to.equal(`the policy is ${Buffer.byteLength(big)} bytes: the most a policy may have is 2097152 bytes`);
      const document = `${doublingRefsOpenApi(2)}${' '.repeat(2 * 1024 * 1024)}`;
      const imported = await answerOf(await ada.json(`${PETSTORE}/operations/openapi`, 'POST', { text: document, dryRun: true }));
      expect(imported.status).to.equal(413);
      expect(imported.body['detail']).to.equal(
        `the OpenAPI document is ${Buffer.byteLength(document)} bytes: the most an OpenAPI document may have is 2097152 bytes`,
      );
    });
  });

  describe('the control: the same check on the event loop that serves the APIs is caught by the same measure', () => {
    let echo: BackendProcess;
    let copy: Awaited<ReturnType<typeof exampleCopy>>;
    let gateway: RecordedGateway | undefined;

    before(async () => {
      [echo, copy] = await Promise.all([backendProcess('echo'), exampleCopy()]);
      await writeFile(copy.configFile, JSON.stringify(openConfig(echo.url)));
      gateway = await recordedGateway({ configFile: copy.configFile, adminPassword: ADMIN_PASSWORD, policyCheckOnTheLoop: true });
    });
    after(async () => {
      await gateway?.stop();
      await echo?.stop();
      await copy?.remove();
    });

    it("a gateway process that checks a policy of 12,000 such regular expressions on its APIs' event loop: past the bound, for the gateway and for the client", async () => {
      const { url, workUrl, loopDelay } = gateway!;
      const report = await latencyDuring(
        // Twice the viewer's policy: seconds of the event loop on any machine, past the client's bounds too.
        (signal) => fetch(`${workUrl!}/check`, { method: 'POST', body: regexHeavyPolicy(12_000), signal }),
        `${url}/gateway/Ente/Echo/v1/unrelated`,
        { patienceMs: 120_000, loopDelay },
      );
      expectDelayed(report, BOUND_MS);
      expect(attackAnswer(report)).to.deep.include({ status: 200, body: { valid: true, issues: [] } });
    });
  });

  describe('the bounds of the work: time budget, queue (a gateway given tight bounds)', () => {
    let pet: PetstoreGateway | undefined;
    afterEach(async () => {
      await pet?.stop();
      pet = undefined;
    });

    it('a job past its time budget is stopped with 422 naming the budget, and the next job is answered', async () => {
      pet = await startPetstore({ operatorWork: { timeoutMs: 500 } });
      const vera = new OperatorClient(pet.server.adminUrl!);
      expect((await vera.signIn('vera', PASSWORDS.vera)).status).to.equal(200);
      const over = await answerOf(await vera.json(CHECK, 'POST', { text: regexHeavyPolicy() }));
      expectOverBudget(over, '500 ms');
      expect(over.body['detail']).to.equal('The work went past its budget of 500 ms and was stopped');
      const next = await answerOf(await vera.json(CHECK, 'POST', { text: PERMIT_ALL }));
      expect(next).to.deep.include({ status: 200, body: { valid: true, issues: [] } });
      // The API still serves.
      expect((await pet.putPetAs('client1')).status).to.equal(200);
    });

    it('past the running and queued jobs, an operator gets 503 with Retry-After; the others are answered', async () => {
      // A minute's budget: this is about the queue, and a crowded host takes a job past the 10 s default.
      pet = await startPetstore({ operatorWork: { workers: 1, maxQueued: 1, timeoutMs: 60_000 } });
      const vera = new OperatorClient(pet.server.adminUrl!);
      expect((await vera.signIn('vera', PASSWORDS.vera)).status).to.equal(200);
      const text = regexHeavyPolicy(1500);
      const answers = await Promise.all([0, 1, 2].map(async () => answerOf(await vera.json(CHECK, 'POST', { text }))));
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).to.deep.equal([200, 200, 503]);
      const busy = answers.find((a) => a.status === 503)!;
      expect(busy.retryAfter).to.equal('10');
      expect(busy.body).to.deep.include({
        status: 503,
        gateway_status: 'integration:GATEWAY-503',
        code: 'ERR_OPERATOR_WORK_BUSY',
        detail: "Too many operators' jobs in progress: try again later",
      });
      const after = await answerOf(await vera.json(CHECK, 'POST', { text: PERMIT_ALL }));
      expect(after).to.deep.include({ status: 200, body: { valid: true, issues: [] } });
    });
  });
});

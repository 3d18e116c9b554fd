/**
 * One GET as the unrelated clients of the latency tests make it: over `agent`, its status once the
 * whole answer has arrived; rejected when it fails or takes longer than `patienceMs`.
 */
import { request, type Agent } from 'node:http';

export function statusOfGet(url: string, agent: Agent, patienceMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, timeout: patienceMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer in time')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Validation of what the console is asked to save: the checks of the configuration file
 * (`checkConfig`, every bad field named), the policy paths the console may write, and every XACML
 * policy compiled as the gateway will compile it (errors with the element's path and line).
 *
 * @module
 */
import { ConfigError } from '../config/errors.js';
import type { GatewayConfig } from '../config/types.js';
import { NO_REDIS_STORE } from '../config/traffic.js';
import { checkConfig } from '../config/validate.js';
import { policyIssues, type ProposalIssue } from './policy-check.js';
import { POLICY_PATH, type ConfigProposal, type ConfigSnapshot } from './store.js';

export type { ProposalIssue };

/** What the gateway that will load a proposal has, beside the file: what some settings need. */
export interface ProposalGateway {
  /** Whether the gateway has Redis (`store: "redis"` of traffic control needs it); `undefined`: not checked. */
  readonly hasRedis?: boolean;
}

/**
 * Every problem of a proposal, in document order; none means it may be saved. A policy the
 * proposal does not upload is read from `saved`'s. With `maxCompileMs`, an API's policy whose
 * compilation takes longer is a problem too: the gateway compiles the policies in force on the
 * thread that serves the APIs, so what a save may put in force is bounded by that time. With
 * `gateway`, what the gateway lacks for a setting is a problem too (it would refuse the
 * configuration when putting it in force).
 */
export function proposalIssues(
  proposal: ConfigProposal,
  saved: Pick<ConfigSnapshot, 'policies'>,
  maxCompileMs = Number.POSITIVE_INFINITY,
  gateway: ProposalGateway = {},
): ProposalIssue[] {
  const issues: ProposalIssue[] = [];
  try {
    checkConfig(proposal.document);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    issues.push(...err.issues);
  }
  const document = proposal.document as GatewayConfig;
  if (gateway.hasRedis === false && document?.trafficControl?.store === 'redis')
    issues.push({ path: 'trafficControl.store', message: NO_REDIS_STORE });
  const apis = Array.isArray(document?.apis) ? document.apis : [];
  apis.forEach((api, i) => {
    const az = api?.authorization;
    if (az?.mode !== 'xacml-Policy' || typeof az.policy !== 'string') return;
    const at = `apis[${i}].authorization`;
    const files: Array<[string, string]> = [[az.policy, `${at}.policy`]];
    (Array.isArray(az.references) ? az.references : []).forEach((ref, j) => {
      if (typeof ref === 'string') files.push([ref, `${at}.references[${j}]`]);
    });
    const texts: string[] = [];
    for (const [file, where] of files) {
      if (!POLICY_PATH.test(file)) {
        issues.push({
          path: where,
          message: 'the console keeps policies inside the configuration folder: a relative path of letters, digits and ._- ending in .xml',
        });
        return;
      }
      const text = proposal.policies?.[file] ?? saved.policies[file];
      if (text === undefined) {
        issues.push({ path: where, message: `${file} does not exist: upload the policy with the API` });
        return;
      }
      texts.push(text);
    }
    const timed = (): { compiled: ProposalIssue[]; took: number } => {
      const wall = performance.now();
      const cpu = process.cpuUsage();
      const compiled = policyIssues(texts[0]!, texts.slice(1), az.policy, `${at}.policy`);
      const used = process.cpuUsage(cpu);
      // The compile's own time: the process's CPU time leaves out the waits of a crowded machine,
      // the wall clock the other threads' work; the smaller of the two is nearer to its own.
      return { compiled, took: Math.round(Math.min(performance.now() - wall, (used.user + used.system) / 1000)) };
    };
    const first = timed();
    const compiled = first.compiled;
    let took = first.took;
    // Over the bound: the best of three, so that one slow moment does not refuse an ordinary policy.
    for (let tries = 1; compiled.length === 0 && took > maxCompileMs && tries < 3; tries++) took = Math.min(took, timed().took);
    issues.push(...compiled);
    if (compiled.length === 0 && took > maxCompileMs) {
      issues.push({
        path: `${at}.policy`,
        file: az.policy,
        message: `compiling this policy took ${took} ms; the gateway compiles the policies in force on the thread that serves the APIs, so one may take at most ${maxCompileMs} ms (operatorWork.maxCompileMs): split it or simplify it`,
      });
    }
  });
  for (const file of Object.keys(proposal.policies ?? {})) {
    if (!POLICY_PATH.test(file)) issues.push({ path: 'policies', message: `${file}: not a policy path the console writes` });
  }
  return issues;
}

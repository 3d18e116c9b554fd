/**
 * The XACML policies of the configuration `npm start` serves, for its banner: the files its APIs
 * name, read from the configuration in force (GATEWAY_CONFIG's too), never a path written here.
 *
 * @module
 */
import path from 'node:path';
import { loadConfig } from 'express-access-gateway';

/** An API and the policy file that authorizes its calls. */
export interface PolicyInForce {
  /** `provider/name/v<version>`. */
  readonly api: string;
  /** The policy file, relative to the working directory when it is below it. */
  readonly file: string;
}

/** Each API's XACML policy file in `configFile` (APIs without XACML authorization left out). */
export async function policiesInForce(configFile: string): Promise<PolicyInForce[]> {
  const config = await loadConfig(configFile);
  return config.apis.flatMap((api) => {
    if (api.authorization.mode !== 'xacml-Policy') return [];
    const relative = path.relative(process.cwd(), api.authorization.policyFile);
    const file = relative.startsWith('..') || path.isAbsolute(relative) ? api.authorization.policyFile : relative;
    return [{ api: `${api.provider}/${api.name}/v${api.version}`, file }];
  });
}

/**
 * A gateway's link to its other instances: the Redis cluster, joined once (at the first
 * configuration load, or `ready()`), and what rides on it besides resets and shared token results:
 * the operators' sign-outs.
 *
 * @module
 */
import { createGatewayCluster, type GatewayCluster, type GatewayClusterOptions } from '../cluster/cluster.js';
import type { RedisClientLike } from '../cluster/redis.js';
import { redisSignOuts } from '../cluster/sign-outs.js';
import type { DependencyStates } from '../observability/dependencies.js';
import type { OperatorAccess } from '../operators/access.js';

/** What the gateway does while Redis cannot be used (said in the `dependency_down` record). */
const WITHOUT_REDIS =
  'traffic control follows onStoreUnavailable, token results are neither shared nor locked, DPoP proofs are refused (503), resets and sign-outs reach this instance only';

/** What joining needs: the connection's settings and this instance's side of a reset. */
export type ClusterLinkOptions = Pick<
  GatewayClusterOptions,
  'secret' | 'nodeId' | 'keyPrefix' | 'commandTimeoutMs' | 'onReset' | 'describe'
> & {
  redis: string | RedisClientLike;
};

export class ClusterLink {
  #joined: Promise<GatewayCluster> | undefined;
  #cluster: GatewayCluster | undefined;

  constructor(
    private readonly options: ClusterLinkOptions,
    /** The operators of the admin listener, whose sign-outs are shared. */
    private readonly access: OperatorAccess | undefined,
    /** Where Redis's availability is told. */
    private readonly dependencies?: DependencyStates,
  ) {}

  /** The cluster once joined (for what is read synchronously: the metrics). */
  get cluster(): GatewayCluster | undefined {
    return this.#cluster;
  }

  /** The cluster, joined at the first call. */
  join(): Promise<GatewayCluster> {
    if (this.#joined !== undefined) return this.#joined;
    const joined = createGatewayCluster(this.options);
    this.#joined = joined;
    const access = this.access;
    void joined.then(
      (cluster) => {
        this.#cluster = cluster;
        // Signed sessions are shared by the instances given one secret: so are their sign-outs.
        access?.sessions.share(redisSignOuts(cluster.redis, cluster.seal));
        const dependencies = this.dependencies;
        if (dependencies !== undefined)
          cluster.redis.onAvailability((available, cause) =>
            available ? dependencies.up('redis') : dependencies.down('redis', cause ?? 'not connected', WITHOUT_REDIS),
          );
      },
      () => undefined,
    );
    return joined;
  }

  /** Leaves the cluster, if it was joined. */
  async close(): Promise<void> {
    await (await this.#joined?.catch(() => undefined))?.close();
  }
}

/**
 * Traffic control: rate limits and quotas per policy and group, counted in this process or in
 * Redis for every instance, and the instance's cap on requests in flight.
 *
 * @module
 */
export { compileTrafficPolicies } from './compile.js';
export type { CompileTrafficPoliciesOptions, CompiledTrafficPolicies, CompiledTrafficPolicy } from './compile.js';
export type { TrafficPolicyResult } from './decision.js';
export { TRAFFIC_CONTROL_INVALID, TRAFFIC_STORE_NEEDS_REDIS, TrafficControlError, TrafficStoreError } from './errors.js';
export type { TrafficControlIssue } from './errors.js';
export { trafficHeaders } from './headers.js';
export type { TrafficHeaderSet } from './headers.js';
export { InstanceCap } from './instance-cap.js';
export { TrafficLimiter, createTrafficLimiter } from './limiter.js';
export type { TrafficLimiterOptions } from './limiter.js';
export { trafficControl } from './middleware.js';
export type { TrafficControlMiddleware, TrafficControlOptions } from './middleware.js';
export type { TrafficFactsOverride } from './facts.js';
export { ApiTrafficControlSchema, TrafficControlSchema, TrafficPolicySchema, trafficPolicyIssues } from './schema.js';
export type { ApiTrafficControlSection, TrafficControlSection, TrafficPolicy } from './schema.js';
export type {
  GroupUsage,
  PolicyStanding,
  TrafficControlSettings,
  TrafficDecision,
  TrafficFacts,
  TrafficGroupBounds,
  TrafficPolicyDefinition,
} from './types.js';
export { simulateTrafficPolicy } from './simulate.js';
export type { SimulateTrafficPolicyOptions, SimulatedGroup, SimulatedTransaction, TrafficSimulation } from './simulate.js';

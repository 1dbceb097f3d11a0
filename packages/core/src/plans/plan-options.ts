/**
 * @module Plans: named sets of policies (`free`, `pro`, a per-customer `acme-contract`), validated once
 * at construction. `policies` is the one-plan form (its plan is named `'default'`); `plans` lists several,
 * and each check names the plan that applies. A name no plan has is answered by the `unknownPlan`
 * fallback plan (by default the default plan), with a warning once per name: never a bypass.
 */

import type { CompiledPolicy } from '../algorithms/kernel.js';
import { RateLimitConfigError } from '../errors.js';
import type { AnyPolicyOptions } from '../types.js';

/** The name of the plan that `policies` (the one-plan form) defines. */
export const DEFAULT_PLAN = 'default';

const PLAN_NAME = /^[\x21-\x7e](?:[\x20-\x7e]{0,62}[\x21-\x7e])?$/;

/** The plan-related options of `createLimiter`. */
export interface PlanOptions {
  /**
   * Named sets of policies, e.g. `{ free: [{ limit: 100, windowMs: 60_000 }], pro: [{ limit: 1000, windowMs: 60_000 }] }`;
   * `limiter.check(key, { plan: 'pro' })` picks one. Instead of `policies`, not with it.
   */
  plans?: Readonly<Record<string, AnyPolicyOptions | readonly AnyPolicyOptions[]>>;
  /** The plan of a check that names none. Defaults to the first plan listed in `plans`. */
  defaultPlan?: string;
  /**
   * The plan that answers a check naming a plan that does not exist (with `WRN_RL_UNKNOWN_PLAN`, at most
   * one line a minute). Defaults to `defaultPlan`. Point it at a strict plan to make typos fail safe.
   */
  unknownPlan?: string;
}

/** Plans resolved: each plan's enforced policies, compiled. */
export interface PlanConfig {
  /** Plan name -> its compiled enforced policies, in the order the plans were listed. */
  readonly plans: ReadonlyMap<string, readonly CompiledPolicy[]>;
  readonly defaultPlan: string;
  readonly unknownPlan: string;
  /** The plans were given (`plans`), not the one-plan `policies`: decisions name their plan in the metrics. */
  readonly named: boolean;
}

/**
 * Validates `plans`, `defaultPlan` and `unknownPlan` (or the one-plan `policies`), compiling each plan's
 * policies with `compileList(list, path)`.
 */
export function parsePlans(
  options: PlanOptions & { policies?: AnyPolicyOptions | readonly AnyPolicyOptions[] },
  compileList: (list: unknown, path: string) => CompiledPolicy[],
): PlanConfig {
  const { plans: input, policies } = options;
  if (input === undefined) {
    if (options.defaultPlan !== undefined || options.unknownPlan !== undefined) {
      const option = options.defaultPlan !== undefined ? 'defaultPlan' : 'unknownPlan';
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_PLANS',
        option,
        'applies only with plans; list your plans in plans: { ... }',
        options[option],
      );
    }
    if (policies === undefined) {
      throw new RateLimitConfigError(
        'ERR_RL_NO_POLICIES',
        'policies',
        'is required, e.g. policies: [{ limit: 100, windowMs: 60_000 }] (or plans: { free: [...], pro: [...] })',
        undefined,
      );
    }
    const compiled = compileList(policies, 'policies');
    return Object.freeze({
      plans: new Map([[DEFAULT_PLAN, compiled]]),
      defaultPlan: DEFAULT_PLAN,
      unknownPlan: DEFAULT_PLAN,
      named: false,
    });
  }
  if (policies !== undefined) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_PLANS',
      'policies',
      'cannot be given with plans: put these policies in a plan, e.g. plans: { default: [...], pro: [...] }',
      policies,
    );
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input) || Object.keys(input).length === 0) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_PLANS',
      'plans',
      'must be an object of at least one plan, name -> policies, e.g. { free: [{ limit: 100, windowMs: 60_000 }] }',
      input,
    );
  }
  const plans = new Map<string, readonly CompiledPolicy[]>();
  for (const [name, list] of Object.entries(input)) {
    if (!PLAN_NAME.test(name)) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_PLAN_NAME',
        `plans['${name}']`,
        'is not a valid plan name: 1 to 64 printable ASCII characters, not starting or ending with a space',
        name,
      );
    }
    plans.set(name, compileList(list, `plans['${name}']`));
  }
  const first = plans.keys().next().value as string;
  const pick = (option: 'defaultPlan' | 'unknownPlan', fallback: string): string => {
    const value = options[option];
    if (value === undefined) return fallback;
    if (typeof value !== 'string' || !plans.has(value)) {
      throw new RateLimitConfigError(
        'ERR_RL_UNKNOWN_PLAN',
        option,
        `must name one of the plans (${[...plans.keys()].map((p) => `'${p}'`).join(', ')})`,
        value,
      );
    }
    return value;
  };
  const defaultPlan = pick('defaultPlan', first);
  return Object.freeze({ plans, defaultPlan, unknownPlan: pick('unknownPlan', defaultPlan), named: true });
}

/**
 * @module Section A's cells: how many keys, and whether every decision is over the limit.
 */

export interface DecisionScenario {
  readonly id: string;
  readonly label: string;
  readonly keys: number;
  readonly overLimit: boolean;
}

export const SCENARIOS = {
  oneKey: { id: '1key', label: '1 key', keys: 1, overLimit: false },
  keys100k: { id: '100k', label: '100k keys', keys: 100_000, overLimit: false },
  keys1m: { id: '1m', label: '1M keys', keys: 1_000_000, overLimit: false },
  overLimit: { id: 'over', label: 'over the limit (1 key)', keys: 1, overLimit: true },
  keys1k: { id: '1k', label: '1k keys', keys: 1000, overLimit: false },
} as const satisfies Record<string, DecisionScenario>;

/** The scenarios of a run, in report order. */
export function decisionScenarios(mode: 'full' | 'quick' | 'smoke'): readonly DecisionScenario[] {
  if (mode === 'smoke') return [SCENARIOS.oneKey, SCENARIOS.keys1k];
  if (mode === 'quick') return [SCENARIOS.oneKey, SCENARIOS.keys100k, SCENARIOS.overLimit];
  return [SCENARIOS.oneKey, SCENARIOS.keys100k, SCENARIOS.keys1m, SCENARIOS.overLimit];
}

/**
 * @module What every Lua kernel shares (kernels/<algorithm>.ts, the twins of algorithms/<algorithm>.ts): the slot a policy
 * writes to, the `lua` template tag, fixed-point helpers and state repair. The fragments are assembled by scripts/plan-script.ts into one straight-line script per
 * plan. Each fragment is a line-by-line port of its TypeScript kernel (algorithms/*.ts): the same
 * integer arithmetic on doubles, the same order of operations and corrections, the same fixed-point
 * scales (milli-units of cost; ticks for the bucket family). The policy's parameters are baked in as
 * literals; its state lives in locals named after the policy's position (`tat1`, `used2`), so the
 * script makes no table but its reply and no closure at all.
 *
 * What a fragment may use: `now` and `cost` (the request), `out` (the reply: five numbers per policy,
 * all 0 until written, then `now`), `KEYS`, `rep` (the mask of repaired keys), and the aliases `INF`,
 * `floor`, `fmod` and `fmt` (math.huge, math.floor, math.fmod, string.format) that every script defines
 * first. Temporaries live in `do ... end` blocks, so
 * only the state locals count toward Lua's 200 locals per function.
 *
 * State that heals: `load` reads a key as never seen when it holds what no kernel writes (another type,
 * a non-integer or negative number, a key without expiry, a time further ahead of `now` than the policy
 * can reach plus `CLOCK_TOLERANCE_MS`), deletes it and sets the policy's bit in `rep` (state-repair.ts).
 */
import type { CompiledPolicy } from '../../../algorithms/kernel.js';

/** Where one policy's fragments read and write: its key, its reply slots, its locals. */
export interface Slot {
  /** The policy's position in the plan, from 1: `KEYS[i]`, and the suffix of its locals. */
  readonly i: number;
  readonly key: string;
  /** Reply slots: 1 admitted, 2 the cost can never fit, 0 rejected; 5 once charged (F_ALLOWED | F_CHARGED). */
  readonly flags: string;
  readonly remaining: string;
  readonly retry: string;
  readonly reset: string;
  readonly delay: string;
}

export function slot(i: number): Slot {
  const o = 5 * (i - 1);
  return {
    i,
    key: `KEYS[${i}]`,
    flags: `out[${o + 1}]`,
    remaining: `out[${o + 2}]`,
    retry: `out[${o + 3}]`,
    reset: `out[${o + 4}]`,
    delay: `out[${o + 5}]`,
  };
}

/** The fragments of one algorithm. Each returns Lua statements. */
export interface LuaKernel {
  /** The locals (before their suffix) that carry the state, as it stands at `now`, from `load` to `commit`. */
  readonly state: readonly string[];
  /** Declares the state locals and fills them from the key: the state as it stands at `now`. */
  load(s: Slot, p: CompiledPolicy): string;
  /** The kernel's `evaluate` for `cost`: writes the flags (1, 2 or 0) and the outcome; charges nothing. */
  evaluate(s: Slot, p: CompiledPolicy): string;
  /**
   * What `evaluate` answers for a cost that can never fit: `remaining` and `reset` of the state as it
   * stands, for a policy that admitted the request when another policy of its group refused it.
   */
  uncharged(s: Slot, p: CompiledPolicy): string;
  /**
   * The kernel's `commit`: charges `cost`, admitted by `evaluate`, and sets the key's expiry. State `load`
   * converted from another limit or burst is written in this policy's scale only here and in `consume`'s
   * charge: a refusal writes nothing (algorithms/gcra.ts adoptGcra).
   */
  commit(s: Slot, p: CompiledPolicy): string;
  /** The kernel's fused `consume`, for a policy that is its own group: flags 5 when it charged. */
  consume?(s: Slot, p: CompiledPolicy): string;
}

/**
 * Template tag for fragments: drops blank lines and the literal's common indentation, and indents every
 * line of a multi-line value as deep as the line it is placed on.
 */
export function lua(strings: TemplateStringsArray, ...values: readonly (string | number)[]): string {
  let text = strings[0] as string;
  for (let k = 0; k < values.length; k++) {
    const indent = /^ */.exec(text.slice(text.lastIndexOf('\n') + 1))?.[0] ?? '';
    text += String(values[k]).replaceAll('\n', `\n${indent}`) + (strings[k + 1] as string);
  }
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const margin = Math.min(...lines.map((line) => line.length - line.trimStart().length));
  return lines.map((line) => line.slice(margin).trimEnd()).join('\n');
}

/** The state locals of policy `s`: `names(s, ['tat', 'frac'])` is `['tat1', 'frac1']` for the first policy. */
export function names<const T extends readonly string[]>(s: Slot, base: T): { readonly [K in keyof T]: string } {
  return base.map((b) => `${b}${s.i}`) as { readonly [K in keyof T]: string };
}

/**
 * `local q = floor(a / b)`, exact for integers 0 <= a < 2^53 and b > 0 (fixed-point.ts floorDiv: the
 * quotient is correctly rounded, so it is at most one off; correct it). `a` is a name, `b` a name or literal.
 */
export function floorDiv(q: string, a: string, b: string | number): string {
  if (b === 1) return `local ${q} = ${a}`;
  return lua`
    local ${q} = floor(${a} / ${b})
    if ${q} * ${b} > ${a} then ${q} = ${q} - 1 elseif (${q} + 1) * ${b} <= ${a} then ${q} = ${q} + 1 end`;
}

/** `local q = ceil(a / b)`, exact (fixed-point.ts ceilDiv). */
export function ceilDiv(q: string, a: string, b: string | number): string {
  if (b === 1) return `local ${q} = ${a}`;
  return lua`
    ${floorDiv(q, a, b)}
    if ${q} * ${b} ~= ${a} then ${q} = ${q} + 1 end`;
}

/** `target = ticks` in milli-units, floored (fixed-point.ts ticksToMilli; one milli-unit is `tpm` ticks). */
export function ticksToMilli(target: string, ticks: string, tpm: number): string {
  if (tpm === 1) return `${target} = ${ticks}`;
  return lua`
    ${floorDiv('milli', ticks, tpm)}
    ${target} = milli`;
}

/** Sets `local m` to `now`'s offset in its clock-aligned window and `target` to the window's start (kernel.ts alignedStart). */
export function alignedStart(target: string, w: number): string {
  return lua`
    local m = fmod(now, ${w})
    ${target} = now - m
    if m < 0 then ${target} = ${target} - ${w} end`;
}

/**
 * How far ahead of `now` stored times may lie and still be read (a clock that stepped back by up to a
 * day): beyond it, state is foreign or corrupt, and would lock its key for ever.
 */
export const CLOCK_TOLERANCE_MS = 86_400_000;

/** A Lua condition: `v` (a name) is a number a kernel may store, an integer in [0, 2^53). */
export function int(v: string): string {
  return `(${v} ~= nil and ${v} >= 0 and ${v} < ${2 ** 53} and ${v} == floor(${v}))`;
}

/** Deletes policy `s`'s key and marks it repaired in the reply (state-repair.ts). */
export function repair(s: Slot): string {
  return `redis.call('DEL', ${s.key}); rep = rep + ${2 ** (s.i - 1)}`;
}

/**
 * Reads a window key: `value` (the stored string) and `expiry` (its PEXPIRETIME). Runs `parse`, which
 * sets `ok = true` (and the state) only for a value a kernel writes, when the key is a string with an
 * expiry at most `ahead` ms after now; anything else (another type, no expiry, a bad value) is repaired.
 */
export function readWithExpiry(s: Slot, parse: string, ahead: number): string {
  return lua`
    local value = redis.pcall('GET', ${s.key})
    if value then
      local ok, expiry = false, -1
      if type(value) == 'string' then expiry = redis.call('PEXPIRETIME', ${s.key}) end
      if expiry >= 0 and expiry <= now + ${ahead + CLOCK_TOLERANCE_MS} then
        ${parse}
      end
      if not ok then ${repair(s)} end
    end`;
}

/** Splits a stored `a` or `a:b` into `first` and `second` (0 when absent); either may be nil if not a number. */
export function splitPair(value: string, first: string, second: string): string {
  return lua`
    local at = string.find(${value}, ':', 1, true)
    if at == nil then
      ${first} = tonumber(${value})
    else
      ${first} = tonumber(string.sub(${value}, 1, at - 1)); ${second} = tonumber(string.sub(${value}, at + 1))
    end`;
}

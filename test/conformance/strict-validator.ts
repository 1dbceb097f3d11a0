/**
 * @module The strict validator of http-spec.md section 5: a RateLimit or RateLimit-Policy field value
 * must parse as a Structured Fields List of String-named items with Integer parameters in range and
 * unique names, or it is rejected. Conformance tests run every header they receive through it.
 */
import { type Item, parseList } from 'structured-headers';

export type RateLimitField = 'RateLimit' | 'RateLimit-Policy';

const UNITS = ['requests', 'content-bytes', 'concurrent-requests'];

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

/** Parses `raw` strictly; throws an Error naming the first violation. */
export function checkRateLimitField(field: RateLimitField, raw: string): Item[] {
  // The parser cannot tell 10.0 from 10: reject Decimals by their text.
  if (/;\s*(q|w|r|t)=-?\d+\.\d/.test(raw)) throw new Error(`${field}: Decimal parameter in ${raw}`);
  const list = parseList(raw);
  if (list.length === 0) throw new Error(`${field}: empty`);
  const seen = new Set<string>();
  const items: Item[] = [];
  for (const member of list) {
    const [name, params] = member;
    if (typeof name !== 'string') throw new Error(`${field}: item name must be an sf-string in ${raw}`);
    if (seen.has(name)) throw new Error(`${field}: duplicate name ${name}`);
    seen.add(name);
    if (params.has('pk') && !(params.get('pk') instanceof ArrayBuffer)) throw new Error(`${field}: pk must be a Byte Sequence`);
    if (field === 'RateLimit-Policy') {
      const q = params.get('q');
      if (!isInt(q) || q < 0) throw new Error(`${field}: q must be a non-negative Integer in ${raw}`);
      const w = params.get('w');
      if (params.has('w') && (!isInt(w) || w < 1)) throw new Error(`${field}: w must be an Integer >= 1 in ${raw}`);
      if (params.has('qu') && !UNITS.includes(params.get('qu') as string)) throw new Error(`${field}: unknown qu in ${raw}`);
    } else {
      const r = params.get('r');
      if (!isInt(r) || r < 0) throw new Error(`${field}: r must be a non-negative Integer in ${raw}`);
      const t = params.get('t');
      if (params.has('t') && (!isInt(t) || t < 0)) throw new Error(`${field}: t must be a non-negative Integer in ${raw}`);
    }
    items.push(member as Item);
  }
  return items;
}

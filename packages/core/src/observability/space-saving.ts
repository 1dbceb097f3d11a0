/**
 * @module Space-Saving (Metwally, Agrawal, El Abbadi, 2005): the heaviest keys of a stream in fixed
 * memory, whatever the number of distinct keys. It monitors `capacity` keys; an unmonitored key takes
 * the place of the one with the smallest count and inherits that count as its error. Guarantees, with
 * N the total weight offered: every reported count overestimates the true count by at most its `error`,
 * and `error <= N / capacity`; every key whose true count exceeds N / capacity is reported. An offer may
 * weigh more than 1 (a sampled stream, each kept occurrence standing for several): the guarantees then
 * hold for the weighted counts.
 * The minimum is kept at the root of a binary heap, so an offer costs O(log capacity).
 */

export interface SketchEntry {
  readonly key: string;
  /** Upper bound of the key's true count. */
  readonly count: number;
  /** How much of `count` may belong to keys it displaced: the true count is in [count - error, count]. */
  readonly error: number;
  /** Whatever the caller attached at the key's last offer (policy, remaining...). */
  readonly note: number;
  readonly label: string;
}

export class SpaceSaving {
  private readonly keys: string[] = [];
  private readonly counts: Float64Array;
  private readonly errors: Float64Array;
  private readonly notes: Float64Array;
  private readonly labels: string[] = [];
  /** heap[i] is a slot; pos[slot] is its place in the heap. */
  private readonly heap: Int32Array;
  private readonly pos: Int32Array;
  private readonly index = new Map<string, number>();
  private size = 0;
  private lastKey: string | undefined;
  private lastSlot = -1;
  /** Total weight offered. */
  total = 0;

  constructor(readonly capacity: number) {
    this.counts = new Float64Array(capacity);
    this.errors = new Float64Array(capacity);
    this.notes = new Float64Array(capacity);
    this.heap = new Int32Array(capacity);
    this.pos = new Int32Array(capacity);
  }

  /** Counts `weight` occurrences of `key`; `label` and `note` are kept as its latest context. */
  offer(key: string, label: string, note: number, weight = 1): void {
    this.total += weight;
    if (key === this.lastKey) {
      // The same key again (one client hammering): no lookup.
      const last = this.lastSlot;
      this.counts[last] = (this.counts[last] as number) + weight;
      this.notes[last] = note;
      if (this.labels[last] !== label) this.labels[last] = label;
      this.siftDown(this.pos[last] as number);
      return;
    }
    let slot = this.index.get(key);
    if (slot === undefined) {
      if (this.size < this.capacity) {
        slot = this.size;
        this.heap[slot] = slot;
        this.pos[slot] = slot;
        this.size += 1;
        this.keys[slot] = key;
        this.counts[slot] = 0;
        this.errors[slot] = 0;
        this.siftUp(slot);
      } else {
        slot = this.heap[0] as number;
        this.index.delete(this.keys[slot] as string);
        this.keys[slot] = key;
        this.errors[slot] = this.counts[slot] as number;
      }
      this.index.set(key, slot);
    }
    this.counts[slot] = (this.counts[slot] as number) + weight;
    this.notes[slot] = note;
    this.labels[slot] = label;
    this.lastKey = key;
    this.lastSlot = slot;
    this.siftDown(this.pos[slot] as number);
  }

  /** The monitored keys, by guaranteed count (count - error), heaviest first. */
  entries(): SketchEntry[] {
    const out: SketchEntry[] = [];
    for (let slot = 0; slot < this.size; slot++) {
      out.push({
        key: this.keys[slot] as string,
        count: this.counts[slot] as number,
        error: this.errors[slot] as number,
        note: this.notes[slot] as number,
        label: this.labels[slot] as string,
      });
    }
    return out.sort((a, b) => b.count - b.error - (a.count - a.error) || b.count - a.count);
  }

  /** The largest possible overestimate of any count: N / capacity. */
  get errorBound(): number {
    return this.total / this.capacity;
  }

  /** The count an unmonitored key may have had: the smallest count once the sketch is full, else 0. */
  minimumIfFull(): number {
    return this.size < this.capacity ? 0 : (this.counts[this.heap[0] as number] as number);
  }

  clear(): void {
    this.index.clear();
    this.size = 0;
    this.total = 0;
    this.lastKey = undefined;
    this.lastSlot = -1;
  }

  private less(a: number, b: number): boolean {
    return (this.counts[this.heap[a] as number] as number) < (this.counts[this.heap[b] as number] as number);
  }

  private swap(a: number, b: number): void {
    const sa = this.heap[a] as number;
    const sb = this.heap[b] as number;
    this.heap[a] = sb;
    this.heap[b] = sa;
    this.pos[sb] = a;
    this.pos[sa] = b;
  }

  private siftUp(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private siftDown(i: number): void {
    const n = this.size;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) return;
      const r = l + 1;
      const child = r < n && this.less(r, l) ? r : l;
      if (!this.less(child, i)) return;
      this.swap(i, child);
      i = child;
    }
  }
}

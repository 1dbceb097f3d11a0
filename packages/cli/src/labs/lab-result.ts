/**
 * @module What a lab produces: tables for the terminal and JSON, charts for HTML, and the notes that say
 * where tollgate's rules make a number differ from the textbook figure.
 */

export type LabName = 'a' | 'b' | 'c' | 'd' | 'e';

export interface LabTable {
  readonly title: string;
  readonly columns: readonly string[];
  readonly rows: readonly (readonly (string | number)[])[];
}

/**
 * A chart: one series per name, points (x, y); a line chart, or with `categories`, grouped bars where
 * point x is the index of its category.
 */
export interface LabChart {
  readonly title: string;
  readonly categories?: readonly string[];
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly { readonly name: string; readonly points: readonly (readonly [number, number])[] }[];
}

export interface LabResult {
  readonly name: LabName;
  readonly title: string;
  /** The traffic and the policies, in words. */
  readonly setup: string;
  readonly tables: readonly LabTable[];
  readonly charts: readonly LabChart[];
  /** Where tollgate's rules differ from the textbook figure, and why. */
  readonly notes: readonly string[];
}

/**
 * @module The replay HTML without a browser: self-contained, log text escaped, chart series holding the report numbers.
 */
import { describe, expect, it } from 'vitest';
import { parseCandidates } from '../replay/candidates.js';
import { createReplayEngine } from '../replay/replay-engine.js';
import { escapeHtml } from './html.js';
import { renderReplayHtml } from './replay-html.js';

const T0 = 1_700_000_000_000;

function report() {
  const engine = createReplayEngine(
    parseCandidates([
      '{"algorithm":"fixed-window","limit":2,"windowMs":1000}',
      '{"algorithm":"leaky-bucket","limit":1,"windowMs":1000,"burst":2}',
    ]),
  );
  for (let i = 0; i < 20; i++) engine.push(T0 + i * 100, i % 3 === 0 ? '<script>alert(1)</script>' : 'b', 1);
  return engine.report();
}

describe('replay HTML report', () => {
  const r = report();
  const html = renderReplayHtml(r);

  it('is one self-contained file: no external script, style, image or font', () => {
    expect(html).not.toMatch(/\b(?:src|href)=["']?(?:https?:)?\/\//);
    expect(html).not.toMatch(/@import|url\(/);
    expect(html.startsWith('<!doctype html>')).toBe(true);
  });

  it('escapes keys taken from the log, in the page and in the embedded JSON', () => {
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).toContain(escapeHtml('<script>alert(1)</script>'));
    const json = /<script type="application\/json" id="report-data">(.*?)<\/script>/s.exec(html)?.[1] ?? '';
    expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify(r)));
  });

  it('each chart series carries the numbers of the report', () => {
    const found = new Map<string, number>();
    for (const m of html.matchAll(/data-series="([^"]+)" data-values="([^"]*)"/g))
      found.set(
        m[1] as string,
        (m[2] as string).split(',').reduce((s, x) => s + Number(x), 0),
      );
    for (const c of r.candidates) {
      expect(found.get(`c${c.index}-admitted`)).toBe(c.admitted);
      expect(found.get(`c${c.index}-rejected`)).toBe(c.rejected);
    }
  });
});

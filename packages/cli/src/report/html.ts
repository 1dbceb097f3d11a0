/**
 * @module HTML building blocks for the reports: escaping (log lines carry attacker-chosen text: keys,
 * paths), the page shell with its inline style and self-check script, and tables. No external resource:
 * the file opens anywhere, offline.
 */

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text safe inside an element or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

export function htmlTable(columns: readonly string[], rows: readonly (readonly (string | number)[])[], className = 'grid'): string {
  const head = columns.map((c) => `<th>${escapeHtml(c)}</th>`).join('');
  const body = rows
    .map(
      (r) =>
        `<tr>${r.map((c) => (typeof c === 'number' ? `<td class="n">${c.toLocaleString('en-US')}</td>` : `<td>${escapeHtml(c)}</td>`)).join('')}</tr>`,
    )
    .join('\n');
  return `<table class="${className}"><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1180px;color:#1d2430;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e3e6ea;padding-bottom:4px}
h3{font-size:14px;margin:16px 0 4px}p.meta{color:#5b6573;margin:0 0 12px}
table.grid{border-collapse:collapse;margin:6px 0 12px;font-size:13px}table.grid th,table.grid td{border-bottom:1px solid #eceff3;padding:4px 10px;text-align:left;white-space:nowrap}
table.grid td.n{text-align:right;font-variant-numeric:tabular-nums}table.grid th{background:#f6f7f9;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{border:1px solid #e3e6ea;border-radius:6px;padding:6px;background:#fff}
svg text{font:11px system-ui,sans-serif;fill:#5b6573}svg .title{font-size:12px;font-weight:600;fill:#1d2430}
.legend span{display:inline-block;margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px;vertical-align:-1px}
ul.notes li{margin:4px 0}.warning{border:2px solid #dc2626;background:#fef2f2;color:#7f1d1d;border-radius:6px;padding:8px 12px;margin:8px 0 12px}code{background:#f3f4f6;padding:0 3px;border-radius:3px}
`;

/**
 * Runs in the browser after load: records script errors, sums the numbers each chart series carries
 * (`data-values`, or `data-v` of its marks) and checks the series is drawn (a non-empty box), then marks
 * the page ready. A headless browser test reads these attributes back from the DOM.
 */
const CHECK_SCRIPT = `
(function(){
  var errors=[];window.addEventListener('error',function(e){errors.push(String(e.message));document.body.setAttribute('data-errors',JSON.stringify(errors));});
  window.addEventListener('load',function(){
    var out={};
    document.querySelectorAll('[data-series]').forEach(function(el){
      var sum=0;var v=el.getAttribute('data-values');
      if(v){v.split(',').forEach(function(x){if(x!=='')sum+=Number(x);});}
      el.querySelectorAll('[data-v]').forEach(function(m){sum+=Number(m.getAttribute('data-v'));});
      var box=el.getBBox?el.getBBox():{width:1,height:1};
      out[el.getAttribute('data-series')]={sum:sum,drawn:box.width>0||box.height>0||sum===0};
    });
    document.body.setAttribute('data-rendered',JSON.stringify(out));
    document.body.setAttribute('data-errors',JSON.stringify(errors));
    document.body.setAttribute('data-ready','1');
  });
})();
`;

export function htmlPage(title: string, body: string, data: unknown): string {
  // The report's numbers, as --json prints them, for scripts that scrape the page; `<` escaped so no
  // log-controlled text can close the script element.
  const json = JSON.stringify(data).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body>
${body}
<script type="application/json" id="report-data">${json}</script>
<script>${CHECK_SCRIPT}</script>
</body></html>
`;
}

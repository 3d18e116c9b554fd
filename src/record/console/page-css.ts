/**
 * The console page's style sheet (served at `<mount>/console.css`). System fonts only: the page
 * makes no external request.
 *
 * @module
 */
import type { OutcomeCode } from '../../errors.js';

/** Colours of each outcome: chart fill, badge background, badge text. */
const outcomeColours: Record<OutcomeCode, [fill: string, background: string, text: string]> = {
  OK: ['#2e7d32', '#e5f4e7', '#1b5e20'],
  TOKEN_FAILED: ['#e09a00', '#fff3d6', '#6d4600'],
  AUTHORIZATION_DENIED: ['#c62828', '#fde6e6', '#8e1b1b'],
  INSUFFICIENT_SCOPE: ['#d84315', '#fdece6', '#8f2a0c'],
  AUTHORIZATION_SERVER_ERROR: ['#6a3d9a', '#efe7f8', '#4a2a6d'],
  CONNECTION_ERROR: ['#b5541c', '#fbeadf', '#7a3612'],
  NOT_FOUND: ['#546e7a', '#e8eef1', '#37474f'],
  GENERIC_ERROR: ['#ad1457', '#fbe4ee', '#7b0e3d'],
  ABORTED: ['#757575', '#eeeeee', '#424242'],
  BACKEND_4XX: ['#8d6e00', '#fbf3d0', '#5c4700'],
  BACKEND_5XX: ['#7b1fa2', '#f5e6fa', '#561571'],
};

const outcomeRules = Object.entries(outcomeColours)
  .map(([code, [fill, background, text]]) =>
    `.o-${code}{fill:${fill}}\n.badge.o-${code}{background:${background};color:${text};border-color:${fill}}\n.swatch.o-${code}{background:${fill}}`,
  )
  .join('\n');

/** The console page's CSS. */
export const CONSOLE_CSS = `:root{
  --bg:#f4f6f8;--panel:#fff;--text:#1d2630;--muted:#5a6672;--line:#d8dee4;--accent:#0b5cad;--focus:#ffbf47;
  font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;font-size:15px;line-height:1.45;color:var(--text);background:var(--bg)
}
*{box-sizing:border-box}
body{margin:0}
.skip{position:absolute;left:-9999px;top:0;background:var(--panel);padding:.5rem 1rem;z-index:10}
.skip:focus{left:1rem}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.top{display:flex;justify-content:space-between;align-items:center;gap:1rem;flex-wrap:wrap;background:#12263a;color:#fff;padding:.7rem 1.5rem}
.top h1{margin:0;font-size:1.3rem;font-weight:650;letter-spacing:.01em}
.subtitle{margin:0;color:#b8c7d6;font-size:.85rem}
.live{display:flex;align-items:center;gap:.8rem;flex-wrap:wrap}
.live .muted{color:#b8c7d6}
.check{display:inline-flex;align-items:center;gap:.35rem;cursor:pointer}
main{max-width:1500px;margin:0 auto;padding:1rem 1.5rem 2rem}
.panel{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:.8rem 1rem;margin-bottom:1rem}
.panel h2{font-size:1rem;margin:0 0 .6rem}
.muted{color:var(--muted);font-weight:normal}
.filters{display:flex;flex-wrap:wrap;gap:.6rem 1rem;align-items:flex-end}
.field{display:flex;flex-direction:column;gap:.2rem;min-width:9rem}
.field.narrow{min-width:5rem;width:5rem}
#f-outcome{max-width:15rem}
label{font-size:.8rem;font-weight:600;color:var(--muted)}
.check{font-size:.85rem;font-weight:normal;color:inherit}
input,select,button{font:inherit;font-size:.9rem}
input,select{padding:.3rem .45rem;border:1px solid #aab4be;border-radius:4px;background:#fff;color:var(--text)}
.field.narrow input{width:100%}
button{padding:.32rem .8rem;border:1px solid #8a96a3;border-radius:4px;background:#fff;color:var(--text);cursor:pointer}
button:hover{background:#eef2f6}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button.primary:hover{background:#084b8f}
.actions{display:flex;gap:.5rem}
:focus-visible{outline:3px solid var(--focus);outline-offset:1px}
.chart svg{display:block;width:100%;height:auto;max-height:150px}
.chart .axis{stroke:#9aa5b1;stroke-width:1}
.chart .grid{stroke:#e6eaee;stroke-width:1}
.chart text{font-size:11px;fill:var(--muted)}
.chart .none{font-size:14px}
.legend{display:flex;flex-wrap:wrap;gap:.3rem 1.2rem;list-style:none;margin:.4rem 0 0;padding:0;font-size:.85rem}
.legend li{display:flex;align-items:center;gap:.35rem}
.swatch{display:inline-block;width:.8rem;height:.8rem;border-radius:2px}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.38rem .55rem;border-bottom:1px solid var(--line);vertical-align:top}
thead th{font-size:.78rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);background:#f8fafb}
#transactions thead th{position:sticky;top:0;z-index:1}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
#rows tr{cursor:pointer}
#rows tr:nth-child(even){background:#fafbfc}
#rows tr:hover{background:#edf4fb}
#rows tr:focus{outline:3px solid var(--focus);outline-offset:-3px;background:#fff8e6}
td.time{white-space:nowrap;font-variant-numeric:tabular-nums}
td.request{max-width:22rem;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.82rem}
.method{font-weight:700;margin-right:.35rem}
.badge{display:inline-block;padding:.05rem .5rem;border:1px solid;border-radius:999px;font-size:.82rem;font-weight:600;white-space:nowrap}
.badge .en{font-weight:normal;opacity:.85}
.who{display:flex;flex-direction:column}
.who .client{color:var(--muted);font-size:.85rem}
.message{margin:.2rem 0;color:#8e1b1b;min-height:0}
.message:empty{display:none}
.empty{color:var(--muted);font-style:italic}
#more{margin-top:.7rem}
dialog{width:min(1180px,95vw);max-height:90vh;border:1px solid var(--line);border-radius:10px;padding:0;box-shadow:0 12px 40px rgba(0,0,0,.3);color:var(--text)}
dialog::backdrop{background:rgba(18,38,58,.45)}
.dialog-head{display:flex;justify-content:space-between;align-items:center;gap:1rem;padding:.8rem 1.2rem;border-bottom:1px solid var(--line);position:sticky;top:0;z-index:2;background:var(--panel)}
.dialog-head h2{margin:0;font-size:1.1rem}
.key{font-size:.75rem;border:1px solid #aab4be;border-radius:3px;padding:0 .25rem;margin-left:.3rem;color:var(--muted)}
.detail-body{padding:.4rem 1.2rem 1.2rem}
.detail-body section{margin-top:1rem}
.cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:0 2rem}
.detail-body h3{font-size:.95rem;margin:0 0 .4rem;padding-bottom:.2rem;border-bottom:2px solid #e6eaee}
.detail-body h4{font-size:.85rem;margin:.6rem 0 .3rem;color:var(--muted)}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0}
dl.kv dt{font-weight:600;color:var(--muted);font-size:.85rem}
dl.kv dd{margin:0;overflow-wrap:anywhere}
.mono,.detail-body td{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.82rem;overflow-wrap:anywhere}
.detail-body table th{font-size:.78rem;color:var(--muted);background:#f8fafb}
.detail-body table th[scope=row]{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.82rem;color:var(--text);background:transparent;max-width:18rem;overflow-wrap:anywhere}
.detail-body pre{white-space:pre-wrap;overflow-wrap:anywhere}
.decision{display:block;background:#fde6e6;border-left:4px solid #c62828;padding:.4rem .7rem;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
.level-error td.level,.level-warn td.level{font-weight:700}
.level-error td.level{color:#8e1b1b}
.level-warn td.level{color:#6d4600}
.note{color:var(--muted);font-style:italic;margin:.2rem 0}
${outcomeRules}
.top label,.top .check{color:#e6edf4}
.top .inline{display:inline-flex;align-items:center;gap:.35rem;font-size:.85rem;font-weight:600}
.tabs{display:flex;gap:.25rem;max-width:1500px;margin:0 auto;padding:.6rem 1.5rem 0}
.tabs a{padding:.4rem .9rem;border:1px solid var(--line);border-bottom:none;border-radius:6px 6px 0 0;background:#e8edf2;color:var(--text);text-decoration:none;font-weight:600}
.tabs a[aria-current=page]{background:var(--panel);color:var(--accent);box-shadow:inset 0 3px 0 var(--accent)}
.search{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}
.search input{flex:1 1 18rem;min-width:0;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
fieldset{border:1px solid var(--line);border-radius:6px;margin:0;padding:.3rem .6rem .5rem}
legend{font-size:.8rem;font-weight:600;color:var(--muted);padding:0 .25rem}
.field.wide{flex:1 1 100%}
details.more-filters>.filters{margin-top:.5rem}
details.field summary{cursor:pointer;font-size:.85rem;font-weight:600;color:var(--muted)}
.choices{display:flex;flex-wrap:wrap;gap:.25rem 1rem}
.choices .check{font-size:.85rem}
.hint{flex:1 1 100%;margin:0;font-size:.8rem;color:var(--muted)}
.totals{margin:.3rem 0 0;font-size:.9rem;font-variant-numeric:tabular-nums}
.export{margin-top:.8rem}
.export summary{cursor:pointer;font-weight:600}
.export form{margin-top:.5rem}
.figures{display:flex;flex-wrap:wrap;gap:.6rem 2rem;margin:0 0 .8rem}
.figures div{display:flex;flex-direction:column}
.figures dt{font-size:.8rem;font-weight:600;color:var(--muted)}
.figures dd{margin:0;font-size:1.25rem;font-weight:650;font-variant-numeric:tabular-nums}
.report-grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,22rem),1fr));gap:1rem}
.report-part h3{font-size:.95rem;margin:0 0 .3rem}
table.top th[scope=row]{font-weight:normal;overflow-wrap:anywhere}
a{color:var(--accent)}
@media (max-width:900px){.cols{grid-template-columns:minmax(0,1fr)}}
@media (max-width:800px){main{padding:.6rem}.top{padding:.6rem}.tabs{padding:.5rem .6rem 0}}
@media (max-width:700px){
  .field{min-width:0;flex:1 1 45%}
  .field.narrow{width:auto;flex:1 1 45%}
  #transactions thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
  #transactions,#transactions tbody,#rows tr,#rows td{display:block;width:100%}
  #rows tr{border:1px solid var(--line);border-radius:8px;margin:0 0 .6rem;padding:.4rem .6rem;background:var(--panel)}
  #rows tr:nth-child(even){background:var(--panel)}
  #rows td{border:none;padding:.12rem 0;display:flex;gap:.6rem;justify-content:space-between;text-align:right;max-width:none;white-space:normal}
  #rows td::before{content:attr(data-label);font-size:.78rem;font-weight:600;color:var(--muted);text-align:left;flex:none}
  #rows td.request{overflow-wrap:anywhere}
  #rows td.outcome,#rows td.status{font-size:1rem}
  .who{align-items:flex-end}
  dialog{width:100vw;max-width:100vw;max-height:100vh;height:100%;border-radius:0;margin:0}
  .detail-body{padding:.4rem .7rem 1rem}
  dl.kv{grid-template-columns:minmax(0,1fr)}
  dl.kv dt{margin-top:.3rem}
}
`;

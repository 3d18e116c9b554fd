/**
 * The configuration console's style sheet: the monitoring console's, plus the forms, the policy
 * editor, the versions' differences. System fonts only: the page makes no external request.
 *
 * @module
 */
import { CONSOLE_CSS } from '../record/console/page.js';

/** The configuration console's CSS (`GET <basePath>/configuration/configuration.css`). */
export const CONFIGURATION_CSS = `${CONSOLE_CSS}
[hidden]{display:none !important}
.top a.link{color:#fff}
.inline{display:inline-flex;align-items:center;gap:.35rem;color:#b8c7d6}
.narrow-panel{max-width:26rem}
.stack{display:flex;flex-direction:column;gap:.6rem;align-items:flex-start}
.stack .field{width:100%}
.sections{display:flex;flex-wrap:wrap;gap:.4rem 1.2rem}
.sections a{color:var(--accent)}
.error{color:#8e1b1b;font-weight:600;margin:.3rem 0}
.error:empty{display:none}
.errors{list-style:none;margin:.5rem 0 0;padding:0}
.errors:empty{display:none}
.errors li{background:#fde6e6;border-left:4px solid #c62828;padding:.45rem .7rem;margin-bottom:.35rem}
.errors .field-path,.errors .element{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.82rem;display:block;overflow-wrap:anywhere}
.errors button{margin-top:.3rem}
.ok,.errors li.ok{background:#e5f4e7;border-left:4px solid #2e7d32;padding:.45rem .7rem}
.tools{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem 2rem;margin-top:.8rem}
.results{list-style:none;padding:0;margin:.4rem 0}
.results li{padding:.2rem 0}
.state-ok{color:#1b5e20;font-weight:600}
.state-pending{color:#6d4600;font-weight:600;background:#fff3d6;padding:0 .35rem;border-radius:3px}
.api-list{list-style:none;margin:0 0 1rem;padding:0}
.api-list button{width:100%;text-align:left;margin-bottom:.3rem}
.api-list button[aria-current=true]{background:#e3eefa;border-color:var(--accent);font-weight:600}
fieldset{border:1px solid var(--line);border-radius:6px;margin:0 0 .7rem;padding:.5rem .8rem;display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:flex-end}
legend{font-weight:650;font-size:.9rem;padding:0 .3rem}
.field.wide{flex:1;min-width:16rem}
.field.wide input{width:100%}
input[readonly],select:disabled,input:disabled{background:#f1f3f5;color:#4a5560}
table.ops td{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
button.danger{border-color:#c62828;color:#8e1b1b}
button.danger:hover{background:#fde6e6}
button:disabled{opacity:.55;cursor:not-allowed}
.editor{display:flex;border:1px solid #aab4be;border-radius:4px;background:#fff;height:26rem;overflow:hidden}
.gutter{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.82rem;line-height:1.35;padding:.4rem .4rem;text-align:right;color:#8a96a3;background:#f4f6f8;user-select:none;overflow:hidden;min-width:3rem}
.gutter span{display:block}
.gutter span.bad{background:#c62828;color:#fff;border-radius:2px}
.editor textarea{flex:1;border:0;resize:none;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.82rem;line-height:1.35;padding:.4rem .5rem;white-space:pre;overflow:auto;tab-size:2;border-radius:0}
.editor textarea:focus{outline:3px solid var(--focus);outline-offset:-3px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(22rem,1fr));gap:1rem}
.card{border:1px solid var(--line);border-radius:6px;padding:.6rem .8rem}
.card h3{margin:0 0 .4rem;font-size:.95rem}
.diff{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.82rem;margin-top:.6rem}
.diff h3{font-family:system-ui,sans-serif;font-size:.9rem;margin:.8rem 0 .3rem}
.diff table td{padding:.05rem .5rem;border:0;white-space:pre-wrap;overflow-wrap:anywhere}
.diff td.ln{color:#8a96a3;text-align:right;width:3.5rem;user-select:none}
.diff tr.add{background:#e5f4e7}
.diff tr.del{background:#fde6e6}
.diff tr.gap td{color:#8a96a3;text-align:center}
.import{flex-basis:100%;border-top:1px dashed var(--line);padding-top:.5rem}
.import h4{margin:0 0 .3rem;font-size:.88rem}
.results li.op-added{color:#1b5e20}
.results li.op-removed{color:#8e1b1b}
td.result-ok{color:#1b5e20;font-weight:600}
td.result-refused,td.result-failed{color:#8e1b1b;font-weight:600}
.whatif{margin-top:.8rem;border-top:1px solid var(--line);padding-top:.4rem}
.whatif h3{margin:.2rem 0 .3rem;font-size:.95rem}
.whatif td a{overflow-wrap:anywhere}
.whatif .to-permit{color:#1b5e20;font-weight:600}
.whatif .to-deny{color:#8e1b1b;font-weight:600}
.whatif .to-other{color:#6d4600;font-weight:600}
@media (max-width:900px){.tools{grid-template-columns:minmax(0,1fr)}}
`;

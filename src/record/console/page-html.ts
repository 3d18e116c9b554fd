/**
 * The console page's HTML. No inline script or style (the page's CSP forbids them); the
 * script fills every value with `textContent` and puts the texts of the page's language on the
 * elements marked `data-i18n` (the English texts below are what a page without script shows).
 *
 * @module
 */

/** The console's icon (`GET <mount>/favicon.svg`): a shield, so the browser asks the host for no `/favicon.ico`. */
export const CONSOLE_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><path d="M16 2 4 6v9c0 7.4 5.1 13.4 12 15 6.9-1.6 12-7.6 12-15V6z" fill="#12263a"/><path d="m10 16 4 4 8-9" fill="none" stroke="#7bd88f" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/></svg>
`;

/** Languages of the console page. */
export type ConsoleLanguage = 'it' | 'en';

const field = (id: string, name: string, key: string, label: string, extra = ''): string =>
  `      <div class="field">
        <label for="${id}" data-i18n="${key}">${label}</label>
        <input id="${id}" name="${name}" autocomplete="off"${extra}>
      </div>`;

/** The console page (`GET <mount>/`) in `language` (the default of the page's language switch). */
export function consoleHtml(language: ConsoleLanguage): string {
  return `<!doctype html>
<html lang="${language}" data-default-lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Gateway monitoring console</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="console.css">
<script src="console.js" defer></script>
</head>
<body>
<a class="skip" href="#results-heading" data-i18n="skip">Skip to results</a>
<header class="top">
  <div>
    <h1 data-i18n="heading">Monitoring console</h1>
    <p class="subtitle" data-i18n="subtitle">Transactions recorded by the access gateway</p>
  </div>
  <div class="live">
    <label class="inline" for="lang"><span data-i18n="language">Language</span>
      <select id="lang"><option value="it">Italiano</option><option value="en">English</option></select></label>
    <label class="inline" for="zone"><span data-i18n="times">Times</span>
      <select id="zone"><option value="local" data-i18n="zoneLocal">Local</option><option value="utc">UTC</option></select></label>
    <label class="check"><input type="checkbox" id="auto-refresh" checked> <span data-i18n="autoRefresh">Auto-refresh every 5 s</span></label>
    <button type="button" id="refresh" data-i18n="refresh">Refresh now</button>
    <span id="updated" class="muted" aria-live="off"></span>
  </div>
</header>
<nav class="tabs" aria-label="Views" data-i18n-label="views">
  <a href="#/" id="tab-list" data-i18n="tabList">Transactions</a>
  <a href="#/report" id="tab-report" data-i18n="tabReport">Report</a>
</nav>
<main>
  <section class="panel" aria-labelledby="search-heading">
    <h2 id="search-heading" data-i18n="find">Find a transaction</h2>
    <form id="search" class="search" role="search">
      <label for="q" data-i18n="findLabel">Transaction or message id</label>
      <input id="q" name="q" autocomplete="off" spellcheck="false">
      <button type="submit" data-i18n="findButton">Open</button>
    </form>
  </section>
  <section class="panel" aria-labelledby="filters-heading">
    <h2 id="filters-heading" data-i18n="filters">Window and filters</h2>
    <form id="filters" class="filters">
      <div class="field">
        <label for="f-window" data-i18n="window">Window</label>
        <select id="f-window" name="window">
          <option value="15m" data-i18n="w15m">Last 15 minutes</option>
          <option value="1h" data-i18n="w1h">Last hour</option>
          <option value="24h" data-i18n="w24h">Last 24 hours</option>
          <option value="7d" data-i18n="w7d">Last 7 days</option>
          <option value="custom" data-i18n="wCustom">Custom range</option>
        </select>
      </div>
      <div class="field">
        <label for="f-from"><span data-i18n="from">From</span> <span class="zone-name muted"></span></label>
        <input id="f-from" name="from" placeholder="2025-01-31T08:00:00" autocomplete="off" spellcheck="false" inputmode="numeric">
      </div>
      <div class="field">
        <label for="f-to"><span data-i18n="to">To</span> <span class="zone-name muted"></span></label>
        <input id="f-to" name="to" placeholder="2025-01-31T09:00:00" autocomplete="off" spellcheck="false" inputmode="numeric">
      </div>
      <fieldset class="field wide">
        <legend data-i18n="outcomeGroups">Outcome groups</legend>
        <div id="f-groups" class="choices"></div>
      </fieldset>
      <details class="field wide" id="outcome-details">
        <summary data-i18n="outcomes">Outcomes</summary>
        <fieldset><legend class="visually-hidden" data-i18n="outcomes">Outcomes</legend><div id="f-outcomes" class="choices"></div></fieldset>
      </details>
      <details class="field wide more-filters" id="more-filters">
      <summary data-i18n="moreFilters">More filters</summary>
      <div class="filters">
      <div class="field">
        <label for="f-api" data-i18n="api">API</label>
        <input id="f-api" name="api" list="api-list" placeholder="Ente/PetStore/v1" autocomplete="off">
        <datalist id="api-list"></datalist>
      </div>
${field('f-operation', 'operation', 'operation', 'Operation')}
      <div class="field narrow">
        <label for="f-method" data-i18n="method">Method</label>
        <select id="f-method" name="method"><option value="" data-i18n="any">Any</option><option>GET</option><option>POST</option><option>PUT</option><option>PATCH</option><option>DELETE</option><option>HEAD</option><option>OPTIONS</option></select>
      </div>
${field('f-status', 'status', 'status', 'Status or class', ' placeholder="404, 4xx" pattern="[1-5]([0-9][0-9]|xx|XX)"')}
${field('f-gateway-status', 'gatewayStatus', 'gatewayStatus', 'gateway_status', ' placeholder="protocol:GATEWAY-1352"')}
${field('f-subject', 'subject', 'subject', 'Subject')}
${field('f-client', 'clientId', 'clientId', 'Client id')}
${field('f-username', 'username', 'username', 'Username')}
${field('f-issuer', 'issuer', 'issuer', 'Issuer')}
${field('f-claim', 'claim', 'claim', 'Claim = value', ' placeholder="scope=read"')}
${field('f-address', 'clientAddress', 'clientAddress', 'Client address')}
${field('f-node', 'nodeId', 'nodeId', 'Node')}
${field('f-duration', 'minDurationMs', 'minDuration', 'Minimum duration (ms)', ' inputmode="numeric" pattern="[0-9]*"')}
      <p class="hint" data-i18n="filterHint">Text filters match the start of the value, ignoring case.</p>
      </div>
      </details>
      <div class="actions">
        <button type="submit" class="primary" data-i18n="apply">Apply</button>
        <button type="reset" data-i18n="clear">Clear</button>
      </div>
    </form>
  </section>
  <section class="panel" aria-labelledby="chart-heading">
    <h2 id="chart-heading" data-i18n="chartHeading">Outcomes over time</h2>
    <div id="chart" class="chart"></div>
    <ul id="legend" class="legend" aria-label="Outcome totals" data-i18n-label="legendLabel"></ul>
    <p id="totals" class="totals"></p>
  </section>
  <p id="message" class="message" role="status" aria-live="polite"></p>
  <section id="view-list" class="panel" aria-labelledby="results-heading">
    <h2 id="results-heading" tabindex="-1"><span data-i18n="tabList">Transactions</span> <span id="count" class="muted"></span></h2>
    <div class="table-wrap">
      <table id="transactions">
        <caption class="visually-hidden" data-i18n="caption">Recorded transactions, newest first. Focus a row and press Enter to open its detail.</caption>
        <thead>
          <tr>
            <th scope="col" data-i18n="colTime">Time</th>
            <th scope="col" data-i18n="api">API</th>
            <th scope="col" data-i18n="operation">Operation</th>
            <th scope="col" data-i18n="colRequest">Request</th>
            <th scope="col" class="num" data-i18n="colStatus">Status</th>
            <th scope="col" data-i18n="colOutcome">Outcome</th>
            <th scope="col" data-i18n="colWho">Subject / client</th>
            <th scope="col" class="num" data-i18n="colDuration">Duration</th>
            <th scope="col" data-i18n="nodeId">Node</th>
          </tr>
        </thead>
        <tbody id="rows"></tbody>
      </table>
    </div>
    <p id="empty" class="empty" hidden data-i18n="empty">No transaction matches the filters.</p>
    <button type="button" id="more" hidden data-i18n="more">Load older transactions</button>
    <details class="export" id="export">
      <summary data-i18n="export">Export</summary>
      <form id="export-form" class="filters">
        <div class="field narrow">
          <label for="x-format" data-i18n="format">Format</label>
          <select id="x-format" name="format"><option value="csv">CSV</option><option value="jsonl">JSON Lines</option></select>
        </div>
        <div class="field narrow">
          <label for="x-limit" data-i18n="rowLimit">Row limit</label>
          <input id="x-limit" name="limit" value="10000" inputmode="numeric" pattern="[0-9]*" autocomplete="off">
        </div>
        <fieldset class="field wide">
          <legend data-i18n="columns">CSV columns</legend>
          <div id="x-columns" class="choices"></div>
        </fieldset>
        <div class="actions"><button type="submit" class="primary" data-i18n="download">Download</button></div>
      </form>
    </details>
  </section>
  <section id="view-report" class="panel" aria-labelledby="report-heading" hidden>
    <h2 id="report-heading" tabindex="-1" data-i18n="reportHeading">Report of the window</h2>
    <div id="report" class="report"></div>
  </section>
</main>
<dialog id="detail" aria-labelledby="detail-heading">
  <div class="dialog-head">
    <h2 id="detail-heading">Transaction</h2>
    <button type="button" id="close" class="close"><span data-i18n="close">Close</span> <span class="key">Esc</span></button>
  </div>
  <div id="detail-body" class="detail-body"></div>
</dialog>
</body>
</html>
`;
}

/** The console page in Italian (the gateway's default message set). */
export const CONSOLE_HTML = consoleHtml('it');

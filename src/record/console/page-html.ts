/**
 * The console page's HTML. No inline script or style (the page's CSP forbids them); the
 * script fills every value with `textContent`.
 *
 * @module
 */

/** The console's icon (`GET <mount>/favicon.svg`): a shield, so the browser asks the host for no `/favicon.ico`. */
export const CONSOLE_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><path d="M16 2 4 6v9c0 7.4 5.1 13.4 12 15 6.9-1.6 12-7.6 12-15V6z" fill="#12263a"/><path d="m10 16 4 4 8-9" fill="none" stroke="#7bd88f" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/></svg>
`;

/** The console page (`GET <mount>/`). */
export const CONSOLE_HTML = `<!doctype html>
<html lang="en">
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
<a class="skip" href="#transactions-heading">Skip to transactions</a>
<header class="top">
  <div>
    <h1>Monitoring console</h1>
    <p class="subtitle">Transactions recorded by the access gateway</p>
  </div>
  <div class="live">
    <label class="check"><input type="checkbox" id="auto-refresh" checked> Auto-refresh every 5 s</label>
    <button type="button" id="refresh">Refresh now</button>
    <span id="updated" class="muted"></span>
  </div>
</header>
<main>
  <section class="panel" aria-labelledby="filters-heading">
    <h2 id="filters-heading">Filters</h2>
    <form id="filters" class="filters">
      <div class="field">
        <label for="f-outcome">Outcome</label>
        <select id="f-outcome" name="outcome"><option value="">Any outcome</option></select>
      </div>
      <div class="field">
        <label for="f-api">API</label>
        <input id="f-api" name="api" list="api-list" placeholder="Ente/PetStore/v1" autocomplete="off">
        <datalist id="api-list"></datalist>
      </div>
      <div class="field">
        <label for="f-subject">Subject</label>
        <input id="f-subject" name="subject" autocomplete="off">
      </div>
      <div class="field">
        <label for="f-client">Client id</label>
        <input id="f-client" name="clientId" autocomplete="off">
      </div>
      <div class="field narrow">
        <label for="f-status">Status</label>
        <input id="f-status" name="status" inputmode="numeric" pattern="[1-5][0-9][0-9]" autocomplete="off">
      </div>
      <div class="field">
        <label for="f-from">From</label>
        <input id="f-from" name="from" type="datetime-local" step="1">
      </div>
      <div class="field">
        <label for="f-to">To</label>
        <input id="f-to" name="to" type="datetime-local" step="1">
      </div>
      <div class="actions">
        <button type="submit" class="primary">Apply</button>
        <button type="reset">Clear</button>
      </div>
    </form>
  </section>
  <section class="panel" aria-labelledby="chart-heading">
    <h2 id="chart-heading">Outcomes over time</h2>
    <div id="chart" class="chart"></div>
    <ul id="legend" class="legend" aria-label="Outcome totals"></ul>
  </section>
  <section class="panel" aria-labelledby="transactions-heading">
    <h2 id="transactions-heading" tabindex="-1">Transactions <span id="count" class="muted"></span></h2>
    <p id="message" class="message" role="status" aria-live="polite"></p>
    <div class="table-wrap">
      <table id="transactions">
        <caption class="visually-hidden">Recorded transactions, newest first. Focus a row and press Enter to open its detail.</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">API</th>
            <th scope="col">Operation</th>
            <th scope="col">Request</th>
            <th scope="col" class="num">Status</th>
            <th scope="col">Outcome</th>
            <th scope="col">Subject / client</th>
            <th scope="col" class="num">Duration</th>
          </tr>
        </thead>
        <tbody id="rows"></tbody>
      </table>
    </div>
    <p id="empty" class="empty" hidden>No transaction matches the filters.</p>
    <button type="button" id="more" hidden>Load older transactions</button>
  </section>
</main>
<dialog id="detail" aria-labelledby="detail-heading">
  <div class="dialog-head">
    <h2 id="detail-heading">Transaction</h2>
    <button type="button" id="close" class="close">Close <span class="key">Esc</span></button>
  </div>
  <div id="detail-body" class="detail-body"></div>
</dialog>
</body>
</html>
`;

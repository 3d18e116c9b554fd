/**
 * The configuration console's HTML. No inline script or style (the page's CSP forbids them); the
 * script fills every value with `textContent`. Texts carry `data-i18n` keys: the script shows them
 * in English or Italian.
 *
 * @module
 */

/** The configuration console page (`GET <basePath>/configuration/`). */
export const CONFIGURATION_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Gateway configuration console</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="configuration.css">
<script src="configuration.js" defer></script>
</head>
<body>
<a class="skip" href="#main" data-i18n="skip">Skip to content</a>
<header class="top">
  <div>
    <h1 data-i18n="title">Configuration console</h1>
    <p class="subtitle" data-i18n="subtitle">APIs, token policies and XACML policies of the access gateway</p>
  </div>
  <div class="live">
    <label class="inline" for="lang"><span data-i18n="language">Language</span>
      <select id="lang"><option value="en">English</option><option value="it">Italiano</option></select></label>
    <span id="who" class="muted"></span>
    <a class="link" href="../console/" data-i18n="monitoring">Monitoring console</a>
    <button type="button" id="sign-out" hidden data-i18n="signOut">Sign out</button>
  </div>
</header>
<main id="main" tabindex="-1">
  <p id="status" class="message" role="status" aria-live="polite"></p>
  <section id="sign-in-panel" class="panel narrow-panel" aria-labelledby="sign-in-heading" hidden>
    <h2 id="sign-in-heading" data-i18n="signIn">Sign in</h2>
    <form id="sign-in" class="stack">
      <div class="field"><label for="si-user" data-i18n="username">User name</label><input id="si-user" name="username" autocomplete="username" required maxlength="64"></div>
      <div class="field"><label for="si-pass" data-i18n="password">Password</label><input id="si-pass" name="password" type="password" autocomplete="current-password" required maxlength="1024"></div>
      <div class="actions"><button type="submit" class="primary" data-i18n="signIn">Sign in</button></div>
    </form>
    <p id="sign-in-error" class="error" role="alert"></p>
  </section>
  <div id="app" hidden>
    <nav class="panel sections" aria-label="Sections">
      <a href="#runtime-heading" data-i18n="runtime">Nodes and runtime tools</a>
      <a href="#apis-heading" data-i18n="apis">APIs</a>
      <a href="#policy-heading" data-i18n="policyNav">XACML policy</a>
      <a href="#token-heading" data-i18n="tokenPolicies">Token policies</a>
      <a href="#versions-heading" data-i18n="versions">Versions</a>
      <a href="#audit-heading" data-role="operator" data-i18n="audit">Audit log</a>
    </nav>

    <section class="panel" aria-labelledby="runtime-heading">
      <h2 id="runtime-heading" tabindex="-1" data-i18n="runtime">Nodes and runtime tools</h2>
      <p id="saved-line"></p>
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden" data-i18n="nodesCaption">Gateway instances and the configuration each has in force</caption>
          <thead><tr>
            <th scope="col" data-i18n="node">Node</th>
            <th scope="col" data-i18n="inForceVersion">Version in force</th>
            <th scope="col" data-i18n="state">State</th>
            <th scope="col" data-i18n="loadedAt">Loaded at</th>
            <th scope="col" data-i18n="expiresAt">Expires at</th>
          </tr></thead>
          <tbody id="nodes"></tbody>
        </table>
      </div>
      <div class="tools" data-role="operator">
        <div>
          <button type="button" id="reset" class="primary" data-i18n="reset">ResetAllCaches</button>
          <p class="note" data-i18n="resetHelp">Reloads the configuration on every node, compiles its policies and forgets every cached token result.</p>
          <ul id="reset-result" class="results" aria-live="polite"></ul>
        </div>
        <form id="forget" class="filters">
          <div class="field"><label for="forget-kind" data-i18n="forgetWhose">Forget the token results of</label>
            <select id="forget-kind"><option value="subject" data-i18n="subject">Subject</option><option value="clientId" data-i18n="clientId">Client id</option></select></div>
          <div class="field"><label for="forget-value" data-i18n="value">Value</label><input id="forget-value" required maxlength="1024" autocomplete="off"></div>
          <div class="actions"><button type="submit" data-i18n="forget">Forget</button></div>
          <p id="forget-result" class="note" role="status"></p>
        </form>
      </div>
    </section>

    <section class="panel" aria-labelledby="apis-heading">
      <h2 id="apis-heading" tabindex="-1" data-i18n="apis">APIs</h2>
      <div class="cols">
        <div>
          <ul id="api-list" class="api-list" aria-label="APIs"></ul>
          <form id="add-api" class="stack" data-role="admin">
            <h3 data-i18n="addApi">Add an API</h3>
            <div class="field"><label for="new-provider" data-i18n="provider">Provider</label><input id="new-provider" required></div>
            <div class="field"><label for="new-name" data-i18n="name">Name</label><input id="new-name" required></div>
            <div class="field"><label for="new-version" data-i18n="version">Version</label><input id="new-version" inputmode="numeric" required></div>
            <div class="field"><label for="new-backend" data-i18n="backendUrl">Backend URL</label><input id="new-backend" type="url" required></div>
            <div class="actions"><button type="submit" data-i18n="add">Add</button></div>
            <ul id="add-api-errors" class="errors" role="alert"></ul>
          </form>
        </div>
        <form id="api-form" class="api-form" hidden>
          <h3 id="api-title"></h3>
          <fieldset>
            <legend data-i18n="backend">Backend</legend>
            <div class="field"><label for="f-backend-url" data-i18n="backendUrl">Backend URL</label><input id="f-backend-url" data-field="backend.url"></div>
            <div class="field narrow"><label for="f-backend-timeout" data-i18n="timeoutMs">Read timeout (ms)</label><input id="f-backend-timeout" inputmode="numeric" data-field="backend.timeoutMs"></div>
          </fieldset>
          <fieldset>
            <legend data-i18n="tokenManagement">Token management</legend>
            <label class="check"><input type="checkbox" id="f-tm-enabled" data-field="tokenManagement.enabled"> <span data-i18n="enabled">Enabled</span></label>
            <div class="field"><label for="f-tm-policy" data-i18n="tokenPolicy">Token policy</label><select id="f-tm-policy" data-field="tokenManagement.policy"></select></div>
            <label class="check"><input type="checkbox" id="f-tm-jwt" data-field="tokenManagement.jwtValidation"> <span data-i18n="jwtValidation">JWT validation</span></label>
            <label class="check"><input type="checkbox" id="f-tm-introspection" data-field="tokenManagement.introspection"> <span data-i18n="introspection">Introspection</span></label>
            <label class="check"><input type="checkbox" id="f-tm-userinfo" data-field="tokenManagement.userInfo"> <span data-i18n="userInfo">User Info</span></label>
            <label class="check"><input type="checkbox" id="f-tm-forward" data-field="tokenManagement.tokenForward"> <span data-i18n="tokenForward">Token Forward</span></label>
          </fieldset>
          <fieldset>
            <legend data-i18n="authorization">Authorization</legend>
            <div class="field"><label for="f-az-mode" data-i18n="mode">Mode</label><select id="f-az-mode" data-field="authorization.mode"><option value="none">none</option><option value="xacml-Policy">xacml-Policy</option></select></div>
            <div class="field"><label for="f-az-policy" data-i18n="policyFile">Policy file</label><input id="f-az-policy" data-field="authorization.policy" placeholder="policies/api.xml"></div>
          </fieldset>
          <fieldset>
            <legend data-i18n="recording">Message recording</legend>
            <label class="check"><input type="checkbox" id="f-rec-incoming" data-field="recording.incomingHeaders"> <span data-i18n="incomingHeaders">Record the headers received from the client</span></label>
            <label class="check"><input type="checkbox" id="f-rec-headers" data-field="recording.outgoingHeaders"> <span data-i18n="outgoingHeaders">Record the headers sent to the backend</span></label>
            <label class="check"><input type="checkbox" id="f-rec-request-body" data-field="recording.requestBody"> <span data-i18n="requestBody">Record the request body</span></label>
            <label class="check"><input type="checkbox" id="f-rec-response-body" data-field="recording.responseBody"> <span data-i18n="responseBody">Record the response body</span></label>
            <div class="field"><label for="f-rec-xacml" data-i18n="xacmlRequests">XACML requests kept (what-if)</label><select id="f-rec-xacml" data-field="recording.xacmlRequests"><option value="denied" data-i18n="xacmlDenied">of decisions that are not Permit</option><option value="all" data-i18n="xacmlAll">of every decision</option></select></div>
            <div class="field narrow"><label for="f-rec-max-body" data-i18n="maxBodyBytes">Bytes of a body kept</label><input id="f-rec-max-body" inputmode="numeric" data-field="recording.maxBodyBytes" placeholder="4096"></div>
          </fieldset>
          <fieldset>
            <legend data-i18n="operations">Operations</legend>
            <table class="ops">
              <caption class="visually-hidden" data-i18n="operations">Operations</caption>
              <thead><tr><th scope="col" data-i18n="name">Name</th><th scope="col" data-i18n="method">Method</th><th scope="col" data-i18n="path">Path</th><th scope="col"><span class="visually-hidden" data-i18n="actions">Actions</span></th></tr></thead>
              <tbody id="ops"></tbody>
            </table>
            <div class="filters" data-role="admin">
              <div class="field"><label for="op-name" data-i18n="name">Name</label><input id="op-name"></div>
              <div class="field narrow"><label for="op-method" data-i18n="method">Method</label><select id="op-method"><option>GET</option><option>POST</option><option>PUT</option><option>PATCH</option><option>DELETE</option><option>HEAD</option><option>OPTIONS</option></select></div>
              <div class="field"><label for="op-path" data-i18n="path">Path</label><input id="op-path" placeholder="/pet/{petId}"></div>
              <div class="actions"><button type="button" id="op-add" data-i18n="addOperation">Add operation</button></div>
            </div>
            <div id="openapi-import" class="import" data-role="admin">
              <h4 data-i18n="importOpenApi">Import operations from an OpenAPI 3 document</h4>
              <div class="filters">
                <div class="field"><label for="openapi-file" data-i18n="openApiFile">OpenAPI document (JSON or YAML)</label><input id="openapi-file" type="file" accept=".json,.yaml,.yml,application/json,application/yaml"></div>
                <div class="field"><label for="openapi-mode" data-i18n="importMode">Operations not in the document</label><select id="openapi-mode"><option value="merge" data-i18n="modeMerge">keep them</option><option value="replace" data-i18n="modeReplace">remove them</option></select></div>
                <div class="actions">
                  <button type="button" id="openapi-preview" data-i18n="preview">Preview</button>
                  <button type="button" id="openapi-save" data-i18n="importSave">Import and save</button>
                </div>
              </div>
              <ul id="openapi-result" class="results" aria-live="polite"></ul>
              <ul id="openapi-errors" class="errors" role="alert"></ul>
            </div>
          </fieldset>
          <div class="filters" data-role="admin">
            <div class="field wide"><label for="api-comment" data-i18n="comment">Comment of this version</label><input id="api-comment" maxlength="500"></div>
            <div class="actions">
              <button type="submit" class="primary" data-i18n="save">Save</button>
              <button type="button" id="api-remove" class="danger" data-i18n="removeApi">Remove this API</button>
            </div>
          </div>
          <ul id="api-errors" class="errors" role="alert"></ul>
        </form>
      </div>
    </section>

    <section class="panel" aria-labelledby="policy-heading">
      <h2 id="policy-heading" tabindex="-1"><span data-i18n="policyOf">XACML policy of</span> <span id="policy-api">—</span></h2>
      <p id="policy-file" class="muted"></p>
      <div class="editor">
        <div id="gutter" class="gutter" aria-hidden="true"></div>
        <textarea id="policy-text" spellcheck="false" autocomplete="off" aria-label="XACML policy" wrap="off"></textarea>
      </div>
      <div class="filters" data-role="admin">
        <div class="field wide"><label for="policy-comment" data-i18n="comment">Comment of this version</label><input id="policy-comment" maxlength="500"></div>
        <div class="field narrow"><label for="whatif-limit" data-i18n="whatIfLimit">Last transactions</label><input id="whatif-limit" type="number" min="1" max="2000" step="1" value="200" inputmode="numeric"></div>
        <div class="actions">
          <button type="button" id="policy-check" data-i18n="check">Check</button>
          <button type="button" id="policy-whatif" data-i18n="whatIf">What if</button>
          <button type="button" id="policy-save" class="primary" data-i18n="savePolicy">Save policy</button>
        </div>
      </div>
      <p class="note" data-role="admin" data-i18n="whatIfHelp">What if: the text in the editor, not saved, evaluated against the XACML requests recorded for this API's last transactions; lists every decision it would change. Nothing is saved or put in force.</p>
      <ul id="policy-errors" class="errors" role="alert"></ul>
      <section id="whatif" class="whatif" aria-labelledby="whatif-heading" hidden>
        <h3 id="whatif-heading" tabindex="-1" data-i18n="whatIfHeading">What if this draft were in force</h3>
        <p id="whatif-summary" role="status"></p>
        <p id="whatif-stale" class="state-pending" hidden data-i18n="whatIfStale">The text has changed since: press What if again.</p>
        <div class="table-wrap" id="whatif-table-wrap">
          <table>
            <caption class="visually-hidden" data-i18n="whatIfCaption">Decisions the draft would change</caption>
            <thead><tr>
              <th scope="col" data-i18n="transaction">Transaction</th><th scope="col" data-i18n="time">Time</th><th scope="col" data-i18n="caller">Caller</th>
              <th scope="col" data-i18n="operation">Operation</th><th scope="col" data-i18n="recordedDecision">Recorded</th><th scope="col" data-i18n="draftDecision">Draft</th>
              <th scope="col" data-i18n="decidedBy">Rule of the draft</th>
            </tr></thead>
            <tbody id="whatif-changes"></tbody>
          </table>
        </div>
        <ul id="whatif-notes" class="results"></ul>
      </section>
    </section>

    <section class="panel" aria-labelledby="token-heading">
      <h2 id="token-heading" tabindex="-1" data-i18n="tokenPolicies">Token policies</h2>
      <div id="token-policies" class="cards"></div>
    </section>

    <section class="panel" aria-labelledby="versions-heading">
      <h2 id="versions-heading" tabindex="-1" data-i18n="versions">Versions</h2>
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden" data-i18n="versions">Versions</caption>
          <thead><tr><th scope="col" class="num">#</th><th scope="col" data-i18n="time">Time</th><th scope="col" data-i18n="author">Author</th><th scope="col" data-i18n="comment">Comment</th><th scope="col"><span class="visually-hidden" data-i18n="actions">Actions</span></th></tr></thead>
          <tbody id="versions"></tbody>
        </table>
      </div>
      <form id="compare" class="filters">
        <div class="field narrow"><label for="diff-from" data-i18n="from">From</label><select id="diff-from"></select></div>
        <div class="field narrow"><label for="diff-to" data-i18n="to">To</label><select id="diff-to"></select></div>
        <div class="actions"><button type="submit" data-i18n="compare">Compare</button></div>
      </form>
      <div id="diff" class="diff"></div>
    </section>

    <section class="panel" aria-labelledby="audit-heading" data-role="operator">
      <h2 id="audit-heading" tabindex="-1" data-i18n="audit">Audit log</h2>
      <div class="actions">
        <button type="button" id="audit-refresh" data-i18n="refresh">Refresh</button>
        <button type="button" id="audit-json" data-i18n="exportJson">Export JSON</button>
        <button type="button" id="audit-csv" data-i18n="exportCsv">Export CSV</button>
      </div>
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden" data-i18n="audit">Audit log</caption>
          <thead><tr>
            <th scope="col" data-i18n="time">Time</th><th scope="col" data-i18n="who">Who</th><th scope="col" data-i18n="from">From</th>
            <th scope="col" data-i18n="action">Action</th><th scope="col" data-i18n="target">Target</th><th scope="col" data-i18n="result">Result</th><th scope="col" data-i18n="detail">Detail</th>
          </tr></thead>
          <tbody id="audit"></tbody>
        </table>
      </div>
    </section>
  </div>
</main>
</body>
</html>
`;

// @ts-check
// Configuration console page script. Every value goes into the page with textContent or
// setAttribute: no HTML is ever built from data.

/**
 * What the script reads of the answers of the configuration API (src/configuration/), the admin
 * routes and the operators' session and audit log: the members it uses, as the server sends them.
 * @typedef {{ ok: boolean, status: number, body: any }} Answer A call's answer: its body as parsed (each caller reads its own shape).
 * @typedef {{ username: string, role: string, csrfToken?: string }} Operator The operator signed in.
 * @typedef {{ provider: string, name: string, version: number | string }} ApiKey What names an API.
 * @typedef {{ name: string, method: string, path: string }} Operation An operation of an API.
 * @typedef {{ nodeId: string, state: string, version?: number, configVersion?: string, loadedAt?: number, expiresAt?: number }} NodeState
 *   A node and the configuration it runs.
 * @typedef {{ nodeId: string, applied: boolean, result?: { tokenResultsCleared: number }, error?: string }} NodeReset
 *   What a node said of a reset of the caches.
 * @typedef {{ path?: string, message: string, line?: number, element?: string }} Issue A problem of a saved document or policy.
 * @typedef {{ name: string, metric?: string, limit?: number, windowSeconds?: number, window?: string, groupBy?: string[],
 *   operations?: string[], mode?: string }} TrafficPolicy A traffic policy, as the configuration holds it.
 * @typedef {Record<string, string | number | string[]>} PolicyDraft A traffic policy as the form holds it (the API checks it).
 * @typedef {{ group: string, allowed: number, refused: number }} WhatIfGroup A group's requests in a traffic what-if.
 * @typedef {{ group: string, used: number, limit: number }} UsageGroup A group's use of a traffic policy now.
 * @typedef {{ policy: string, scope?: string, metric?: string, limit?: number, windowSeconds?: number, window?: string,
 *   groups: UsageGroup[] }} PolicyUsage A traffic policy's busiest groups.
 * @typedef {{ changes?: { added?: string[], changed?: string[], removed?: string[], unchanged?: string[] },
 *   skipped?: Array<{ path: string, message: string }>, scopeWhatIf?: ScopeWhatIf }} OpenApiImport What an OpenAPI import changes (or would).
 * @typedef {{ id: string, time: number, method: string, path: string, subject?: string, clientId?: string, scopes: string[],
 *   status: number | null }} ScopeRefusal A recorded call the imported scope rules would refuse.
 * @typedef {{ operation?: string, ways: string[][], checked: number, refused: number, newlyRefused: number,
 *   sample: ScopeRefusal[] }} ScopeRefusals The refusals of one operation.
 * @typedef {{ window: { minutes: number }, read: number, noToken: number, checked: number, refused: number, newlyRefused: number,
 *   noOperation: number, truncated?: boolean, operations: ScopeRefusals[] }} ScopeWhatIf
 *   Which recorded calls an import's scope rules would refuse.
 * @typedef {{ id: string, time?: number, caller: { clientId?: string, subject?: string }, method?: string, operation?: string,
 *   status?: number, incomplete?: boolean, recorded: { decision: string, rule?: string },
 *   draft: { decision: string, rule?: string, policy?: string, path?: string[], statusMessage?: string } }} WhatIfChange
 *   A recorded decision the draft policy changes.
 * @typedef {{ reason: string, count: number, why: string }} WhatIfSkip Transactions the what-if did not evaluate, and why.
 * @typedef {{ from: string, set?: boolean, variable?: string }} SecretSource Where a token policy's secret comes from.
 * @typedef {{ version: number, time?: number, author: string, comment?: string }} Version A saved version of the configuration.
 * @typedef {{ op: string, text: string, oldLine?: number, newLine?: number }} DiffLine A line of a difference.
 * @typedef {{ file: string, lines: DiffLine[] }} DiffFile The difference of one file between two versions.
 * @typedef {{ time?: number, actor?: string, role?: string, address?: string, action: string, target?: string, result: string,
 *   status?: number, detail?: string }} AuditEntry An entry of the operators' audit log.
 */

(function () {
  'use strict';
  /** @type {Readonly<Record<string, Readonly<Record<string, string>>>>} The texts by language (any language falls back to en). */
  var TEXTS = __TEXTS__;
  var ROLES = ['viewer', 'operator', 'admin'];
  // The monitoring console's key: a language chosen in one console is the other's too.
  var LANG_KEY = 'gateway-console-lang';
  /** @type {Record<string, string>} */
  var HEADERS = { accept: 'application/json', '__CONSOLE_HEADER__': '1' };
  /**
   * What the page shows. `me` (the operator signed in), `config`, `draft`, `versions` and `whatIf`
   * hold the configuration API's answers, as it sends them.
   * @type {{
   *   me: Operator | null, lang: string, config: any, selected: string | null, draft: any, versions: any[],
   *   timer: number | null, whatIf: any, nodeId?: string, loadedPolicy?: { api: string, text: string } | null, escaped?: boolean,
   *   tp?: { scope: string, name: string } | null, trafficWhatIf?: any,
   * }}
   */
  var state = { me: null, lang: 'en', config: null, selected: null, draft: null, versions: [], timer: null, whatIf: null };

  /**
   * An element of the page by its id. The page's HTML has every id the script asks for, and which
   * kind of element it is: typed as any of the page's controls, so that the script reads a value,
   * a check box or a dialog without a cast at each use.
   * @param {string} id
   * @returns {Control}
   */
  function $(id) {
    return /** @type {Control} */ (document.getElementById(id));
  }
  /**
   * An element with its attributes (`text`: its text) and children; a missing value is left out.
   * @param {string} tag
   * @param {Record<string, unknown> | null} [attrs]
   * @param {Array<Node | string | number | null | undefined | false>} [children]
   * @returns {HTMLElement}
   */
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs)
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (k === 'text') node.textContent = String(v);
        else node.setAttribute(k, String(v));
      });
    (children || []).forEach(function (c) {
      if (c === undefined || c === null || c === false) return;
      node.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    });
    return node;
  }
  /**
   * The text of `key` in the page's language, its `{name}` placeholders filled from `params`.
   * @param {string} key
   * @param {Record<string, unknown>} [params]
   */
  function t(key, params) {
    var text = (TEXTS[state.lang] && TEXTS[state.lang][key]) || TEXTS.en[key] || key;
    if (params)
      Object.keys(params).forEach(function (p) {
        text = text.split('{' + p + '}').join(String(params[p]));
      });
    return text;
  }
  /** @param {number} n */
  function pad(n) {
    return String(n).padStart(2, '0');
  }
  /** @param {number | string | null | undefined} value a time the server sent (epoch milliseconds or ISO text) */
  function fmtTime(value) {
    if (value === undefined || value === null) return '—';
    var d = new Date(value);
    if (!isFinite(d.getTime())) return '—';
    return (
      d.getFullYear() +
      '-' +
      pad(d.getMonth() + 1) +
      '-' +
      pad(d.getDate()) +
      ' ' +
      pad(d.getHours()) +
      ':' +
      pad(d.getMinutes()) +
      ':' +
      pad(d.getSeconds())
    );
  }
  /** @param {string} [text] */
  function say(text) {
    $('status').textContent = text || '';
    $('status').removeAttribute('data-saved');
  }
  /** @param {string | null} role */
  function allows(role) {
    return state.me !== null && ROLES.indexOf(state.me.role) >= ROLES.indexOf(/** @type {string} */ (role));
  }
  /** @param {ApiKey} api */
  function keyOf(api) {
    return api.provider + '/' + api.name + '/v' + api.version;
  }
  /** @param {ApiKey} api */
  function pathOf(api) {
    return encodeURIComponent(api.provider) + '/' + encodeURIComponent(api.name) + '/' + encodeURIComponent(api.version);
  }

  // ---- language ------------------------------------------------------------------------------

  /**
   * The language the page opens in, the same rule as the monitoring console's: the operator's
   * choice on the switch (remembered by the browser, shared by both consoles), else the first of
   * the browser's languages that is Italian or English, else the gateway's message language.
   * @returns {'it' | 'en'}
   */
  function openingLanguage() {
    var stored = null;
    try {
      stored = window.localStorage.getItem(LANG_KEY);
    } catch (e) {
      /* private mode */
    }
    if (stored === 'it' || stored === 'en') return stored;
    var preferred = (navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || '']).map(
      function (tag) {
        return String(tag).slice(0, 2).toLowerCase();
      },
    );
    for (var i = 0; i < preferred.length; i++)
      if (preferred[i] === 'it' || preferred[i] === 'en') return preferred[i] === 'it' ? 'it' : 'en';
    return document.documentElement.getAttribute('data-default-lang') === 'en' ? 'en' : 'it';
  }

  function translate() {
    document.documentElement.lang = state.lang;
    document.title = t('title');
    document.querySelectorAll('[data-i18n]').forEach(function (node) {
      node.textContent = t(/** @type {string} */ (node.getAttribute('data-i18n')));
    });
    document.querySelectorAll('[data-i18n-label]').forEach(function (node) {
      node.setAttribute('aria-label', t(/** @type {string} */ (node.getAttribute('data-i18n-label'))));
    });
  }

  // ---- calls ---------------------------------------------------------------------------------

  /**
   * A call to the gateway: its answer, never a rejection (an unreachable gateway is status 0).
   * @param {string} method
   * @param {string} url
   * @param {unknown} [body] sent as JSON
   * @returns {Promise<Answer>}
   */
  function call(method, url, body) {
    var headers = Object.assign({}, HEADERS);
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && state.me && state.me.csrfToken) headers['__CSRF_HEADER__'] = state.me.csrfToken;
    return fetch(url, {
      method: method,
      headers: headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(
      function (res) {
        return res
          .json()
          .catch(function () {
            return null;
          })
          .then(function (data) {
            if (res.status === 401 && state.me) signedOut();
            return { ok: res.ok, status: res.status, body: data };
          });
      },
      function () {
        return { ok: false, status: 0, body: { detail: 'the gateway cannot be reached' } };
      },
    );
  }
  /** @param {Pick<Answer, 'status' | 'body'>} answer */
  function detailOf(answer) {
    return answer.body && answer.body.detail ? answer.body.detail : 'HTTP ' + answer.status;
  }

  // ---- session -------------------------------------------------------------------------------

  function signedOut() {
    state.me = null;
    if (state.timer) {
      clearInterval(state.timer);
      state.timer = null;
    }
    $('app').hidden = true;
    $('sign-out').hidden = true;
    $('who').textContent = '';
    $('sign-in-panel').hidden = false;
    $('si-user').focus();
  }
  /** @param {Operator} me */
  function signedIn(me) {
    state.me = me;
    $('sign-in-panel').hidden = true;
    $('app').hidden = false;
    $('sign-out').hidden = false;
    $('who').textContent = t('signedInAs', { u: me.username, r: me.role });
    Array.prototype.forEach.call(document.querySelectorAll('[data-role]'), function (node) {
      node.hidden = !allows(node.getAttribute('data-role'));
    });
    // Every role may write a draft to check it; only an admin's page can save it.
    $('policy-text').readOnly = false;
    loadAll();
    state.timer = setInterval(function () {
      if (!document.hidden) {
        loadState();
        loadUsage();
      }
    }, 5000);
    $('main').focus();
  }
  function loadAll() {
    return Promise.all([loadConfig(), loadState(), loadVersions(), loadUsage(), allows('operator') ? loadAudit() : null]);
  }

  // ---- runtime -------------------------------------------------------------------------------

  function loadState() {
    return call('GET', 'api/state').then(function (a) {
      if (!a.ok) {
        say(detailOf(a));
        return;
      }
      var s = a.body.saved;
      state.nodeId = a.body.nodes[0] ? a.body.nodes[0].nodeId : undefined;
      inForceNotes(s.version, a.body.nodes);
      $('saved-line').textContent =
        t('savedLine', { v: s.version, a: s.author, t: fmtTime(s.time) }) + (s.comment ? ' — ' + s.comment : '');
      $('nodes').replaceChildren.apply(
        $('nodes'),
        a.body.nodes.map(
          /** @param {NodeState} n */ function (n) {
            var label = n.state === 'in force' ? t('inForce') : n.state === 'unknown' ? t('unknown') : t('notInForce');
            return el('tr', { 'data-node': n.nodeId }, [
              el('td', { class: 'mono', text: n.nodeId }),
              el('td', { text: n.version !== undefined ? String(n.version) : n.configVersion ? n.configVersion.slice(0, 12) : '—' }),
              el('td', {}, [
                el('span', { class: n.state === 'in force' ? 'state-ok' : 'state-pending', 'data-state': n.state, text: label }),
              ]),
              el('td', { text: fmtTime(n.loadedAt) }),
              el('td', { text: fmtTime(n.expiresAt) }),
            ]);
          },
        ),
      );
    });
  }
  /**
   * A "saved, not yet in force" note (an editor's, a form's) says so no longer once the nodes' state
   * shows its version, still the last saved, in force on every node (after ResetAllCaches, or the
   * configuration's expiry).
   * @param {number} savedVersion
   * @param {any[]} nodes
   */
  function inForceNotes(savedVersion, nodes) {
    var inForce =
      nodes.length > 0 &&
      nodes.every(function (n) {
        return n.state === 'in force';
      });
    Array.prototype.forEach.call(document.querySelectorAll('[data-saved]'), function (/** @type {HTMLElement} */ note) {
      var version = Number(note.getAttribute('data-saved'));
      if (inForce && version === savedVersion) {
        note.textContent = t('savedInForce', { v: version });
        note.removeAttribute('data-saved');
      }
    });
  }
  function reset() {
    var button = $('reset');
    button.disabled = true;
    $('reset-result').replaceChildren();
    return call('POST', '../admin/reset-caches').then(function (a) {
      button.disabled = false;
      var items = [];
      if (a.ok && a.body.cluster && a.body.cluster.nodes) {
        a.body.cluster.nodes.forEach(
          /** @param {NodeReset} n */ function (n) {
            items.push(
              n.applied
                ? t('resetOk', { n: n.nodeId, c: n.result ? n.result.tokenResultsCleared : 0 })
                : t('resetFailed', { n: n.nodeId, e: n.error || '?' }),
            );
          },
        );
        (a.body.cluster.missing || []).forEach(
          /** @param {string} id */ function (id) {
            items.push(t('resetMissing', { n: id }));
          },
        );
      } else if (a.ok) {
        items.push(t('resetOk', { n: state.nodeId || 'this node', c: a.body.tokenResultsCleared }));
      } else {
        items.push(t('resetFailed', { n: state.nodeId || 'this node', e: detailOf(a) }));
      }
      $('reset-result').replaceChildren.apply(
        $('reset-result'),
        items.map(function (text) {
          return el('li', { text: text });
        }),
      );
      return Promise.all([loadState(), allows('operator') ? loadAudit() : null]);
    });
  }
  /** @param {SubmitEvent} event */
  function forget(event) {
    event.preventDefault();
    /** @type {Record<string, string>} */
    var body = {};
    body[$('forget-kind').value] = $('forget-value').value.trim();
    return call('POST', '../admin/forget', body).then(function (a) {
      $('forget-result').textContent = a.ok ? t('forgotten', { n: a.body.forgotten }) : detailOf(a);
      return loadAudit();
    });
  }

  // ---- configuration -------------------------------------------------------------------------

  function loadConfig() {
    return call('GET', 'api/config').then(function (a) {
      if (!a.ok) {
        say(detailOf(a));
        return;
      }
      state.config = a.body;
      renderApiList();
      renderTokenPolicies();
      renderTraffic();
      var apis = state.config.document.apis || [];
      var keep =
        state.selected &&
        apis.filter(
          /** @param {ApiKey} x */ function (x) {
            return keyOf(x) === state.selected;
          },
        )[0];
      selectApi(keep ? state.selected : apis[0] ? keyOf(apis[0]) : null, false);
    });
  }
  function currentApi() {
    var apis = (state.config && state.config.document.apis) || [];
    return (
      apis.filter(
        /** @param {ApiKey} x */ function (x) {
          return keyOf(x) === state.selected;
        },
      )[0] || null
    );
  }
  function renderApiList() {
    var apis = state.config.document.apis || [];
    $('api-list').replaceChildren.apply(
      $('api-list'),
      apis.map(
        /** @param {ApiKey} api */ function (api) {
          var button = el('button', {
            type: 'button',
            'data-api': keyOf(api),
            'aria-current': keyOf(api) === state.selected ? 'true' : 'false',
            text: keyOf(api),
          });
          button.addEventListener('click', function () {
            selectApi(keyOf(api), true);
          });
          return el('li', {}, [button]);
        },
      ),
    );
  }
  /**
   * @param {string | null} key
   * @param {boolean} focus
   */
  function selectApi(key, focus) {
    state.selected = key;
    $('api-list')
      .querySelectorAll('button')
      .forEach(function (b) {
        b.setAttribute('aria-current', b.getAttribute('data-api') === key ? 'true' : 'false');
      });
    var api = currentApi();
    $('api-form').hidden = !api;
    $('api-errors').replaceChildren();
    if (!api) {
      $('policy-api').textContent = '—';
      return;
    }
    state.draft = JSON.parse(JSON.stringify(api));
    fillApiForm();
    loadPolicy();
    if (focus) $('api-title').focus();
  }
  /**
   * The member at a dotted path, `undefined` where the path stops.
   * @param {any} obj
   * @param {string} path
   * @returns {any}
   */
  function get(obj, path) {
    return path.split('.').reduce(
      /** @param {any} o @param {string} k */ function (o, k) {
        return o === undefined || o === null ? undefined : o[k];
      },
      obj,
    );
  }
  function fillApiForm() {
    var api = state.draft;
    var editable = allows('admin');
    $('api-title').textContent = keyOf(api);
    $('api-title').setAttribute('tabindex', '-1');
    var select = $('f-tm-policy');
    select.replaceChildren.apply(
      select,
      [el('option', { value: '', text: '—' })].concat(
        Object.keys(state.config.document.tokenPolicies || {}).map(
          /** @param {string} name */ function (name) {
            return el('option', { value: name, text: name });
          },
        ),
      ),
    );
    Array.prototype.forEach.call($('api-form').querySelectorAll('[data-field]'), function (input) {
      var value = get(api, input.getAttribute('data-field'));
      if (input.getAttribute('data-field') === 'tokenManagement.tokenForward') value = value === true || (value && value.enabled !== false);
      if (input.getAttribute('data-field') === 'tokenManagement.introspection' && value === undefined) value = true;
      if (input.getAttribute('data-field') === 'recording.xacmlRequests' && value === undefined) value = 'denied';
      if (input.type === 'checkbox') input.checked = value === true;
      else input.value = value === undefined || value === null ? '' : String(value);
      if (input.tagName === 'SELECT' || input.type === 'checkbox') input.disabled = !editable;
      else input.readOnly = !editable;
    });
    renderOperations();
  }
  function renderOperations() {
    var ops = state.draft.operations || [];
    $('ops').replaceChildren.apply(
      $('ops'),
      ops.map(
        /** @param {Operation} op @param {number} index */ function (op, index) {
          var cells = [el('td', { text: op.name }), el('td', { text: op.method }), el('td', { text: op.path })];
          var action = el('td', {});
          if (allows('admin')) {
            var remove = el('button', { type: 'button', 'aria-label': t('remove') + ' ' + op.name, text: t('remove') });
            remove.addEventListener('click', function () {
              state.draft.operations.splice(index, 1);
              if (state.draft.operations.length === 0) delete state.draft.operations;
              renderOperations();
            });
            action.appendChild(remove);
          }
          cells.push(action);
          return el('tr', { 'data-operation': op.name }, cells);
        },
      ),
    );
  }
  /**
   * Sets the member at a dotted path, making the objects on the way; `undefined` deletes it.
   * @param {any} obj
   * @param {string} path
   * @param {unknown} value
   */
  function set(obj, path, value) {
    var keys = path.split('.');
    var o = obj;
    for (var i = 0; i < keys.length - 1; i++) {
      if (o[keys[i]] === undefined || o[keys[i]] === null || typeof o[keys[i]] !== 'object') o[keys[i]] = {};
      o = o[keys[i]];
    }
    if (value === undefined) delete o[keys[keys.length - 1]];
    else o[keys[keys.length - 1]] = value;
  }
  function readApiForm() {
    var api = JSON.parse(JSON.stringify(state.draft));
    Array.prototype.forEach.call($('api-form').querySelectorAll('[data-field]'), function (input) {
      var field = input.getAttribute('data-field');
      var value = input.type === 'checkbox' ? input.checked : input.value.trim();
      if (field === 'backend.timeoutMs' || field === 'recording.maxBodyBytes')
        value = value === '' ? undefined : /^\d+$/.test(value) ? Number(value) : value;
      if (field === 'tokenManagement.policy' && value === '') value = undefined;
      if (field === 'authorization.policy' && value === '') value = undefined;
      if (
        field === 'tokenManagement.tokenForward' &&
        state.draft.tokenManagement &&
        typeof state.draft.tokenManagement.tokenForward === 'object'
      ) {
        // The form shows the switch only: the mode of a detailed setting stays as saved.
        field = 'tokenManagement.tokenForward.enabled';
      }
      set(api, field, value);
    });
    if (api.authorization && api.authorization.mode === 'none') api.authorization = { mode: 'none' };
    if (api.tokenManagement && api.tokenManagement.enabled === false && !api.tokenManagement.policy)
      api.tokenManagement = { enabled: false };
    return api;
  }
  /**
   * The problems of a refused call, in `list`; `onLine` goes to a line of the policy editor.
   * @param {Element} list
   * @param {Pick<Answer, 'status' | 'body'>} answer
   * @param {(line: number, keepFocus?: boolean) => void} [onLine]
   */
  function showIssues(list, answer, onLine) {
    var issues = answer.body && answer.body.issues;
    if (!issues || issues.length === 0) {
      list.replaceChildren(el('li', { text: detailOf(answer) }));
      return;
    }
    list.replaceChildren.apply(
      list,
      issues.map(
        /** @param {Issue} issue */ function (issue) {
          var parts = [];
          if (issue.path)
            parts.push(
              el('span', { class: 'field-path', text: issue.path + (issue.line ? ' (' + t('line', { n: issue.line }) + ')' : '') }),
            );
          parts.push(el('span', { text: issue.message }));
          if (issue.element) parts.push(el('span', { class: 'element', text: t('element') + ': ' + issue.element }));
          if (issue.line && onLine) {
            var go = el('button', { type: 'button', text: t('goToLine', { n: issue.line }) });
            go.addEventListener('click', function () {
              onLine(/** @type {number} */ (issue.line));
            });
            parts.push(el('div', {}, [go]));
          }
          return el('li', {}, parts);
        },
      ),
    );
    var first = list.querySelector('button');
    if (first && onLine)
      onLine(
        /** @type {number} */ (
          issues.filter(
            /** @param {Issue} i */ function (i) {
              return i.line;
            },
          )[0].line
        ),
        true,
      );
  }
  /**
   * Says a save succeeded, or shows why not.
   * @param {Answer} answer
   * @param {Element} list
   * @param {{ onLine?: (line: number, keepFocus?: boolean) => void }} [after]
   */
  function saved(answer, list, after) {
    if (!answer.ok) {
      showIssues(list, answer, after && after.onLine);
      return false;
    }
    list.replaceChildren(
      el('li', { class: 'ok', 'data-saved': String(answer.body.version.version), text: t('saved', { v: answer.body.version.version }) }),
    );
    say(t('saved', { v: answer.body.version.version }));
    $('status').setAttribute('data-saved', String(answer.body.version.version));
    return true;
  }
  function refreshAfterSave() {
    return Promise.all([loadConfig(), loadState(), loadVersions(), loadAudit()]);
  }
  /** @param {SubmitEvent} event */
  function saveApi(event) {
    event.preventDefault();
    var api = readApiForm();
    var previous = state.selected;
    var path = /** @type {string} */ (previous).split('/');
    /** @type {{ api: unknown, comment: string, baseVersion: number, policy?: string }} */
    var body = { api: api, comment: $('api-comment').value, baseVersion: state.config.version.version };
    var before = currentApi();
    var az = api.authorization;
    // A policy file the API did not have yet is uploaded with it, from the editor.
    if (
      az &&
      az.mode === 'xacml-Policy' &&
      az.policy &&
      !(before.authorization && before.authorization.policy === az.policy) &&
      $('policy-text').value.trim() !== ''
    )
      body.policy = $('policy-text').value;
    return call(
      'PUT',
      'api/apis/' + encodeURIComponent(path[0]) + '/' + encodeURIComponent(path[1]) + '/' + encodeURIComponent(path[2].slice(1)),
      body,
    ).then(function (a) {
      var ok = saved(a, $('api-errors'));
      if (ok) {
        state.selected = keyOf(api);
        $('api-comment').value = '';
        return refreshAfterSave().then(function () {
          saved(a, $('api-errors'));
        });
      }
    });
  }
  function addOperation() {
    var name = $('op-name').value.trim();
    var path = $('op-path').value.trim();
    state.draft.operations = (state.draft.operations || []).concat([{ name: name, method: $('op-method').value, path: path }]);
    $('op-name').value = '';
    $('op-path').value = '';
    renderOperations();
    $('op-name').focus();
  }
  /**
   * @param {OpenApiImport} body
   * @param {boolean} dryRun
   */
  function importChanges(body, dryRun) {
    var c = body.changes || {};
    var items = [];
    if (dryRun) items.push(el('li', { text: t('previewOnly') }));
    if (c.added && c.added.length)
      items.push(el('li', { class: 'op-added', text: t('opsAdded', { n: c.added.length, l: c.added.join(', ') }) }));
    if (c.changed && c.changed.length) items.push(el('li', { text: t('opsChanged', { n: c.changed.length, l: c.changed.join(', ') }) }));
    if (c.removed && c.removed.length)
      items.push(el('li', { class: 'op-removed', text: t('opsRemoved', { n: c.removed.length, l: c.removed.join(', ') }) }));
    if (c.unchanged) items.push(el('li', { text: t('opsUnchanged', { n: c.unchanged.length }) }));
    (body.skipped || []).forEach(function (s) {
      items.push(el('li', { text: t('opsSkipped', { p: s.path, m: s.message }) }));
    });
    $('openapi-result').replaceChildren.apply($('openapi-result'), items);
    renderScopeRefusals(body.scopeWhatIf);
  }
  /** @param {ScopeWhatIf | undefined} r */
  function renderScopeRefusals(r) {
    $('openapi-refusals').hidden = !r;
    if (!r) return;
    var m = r.window.minutes;
    $('openapi-refusals-summary').textContent =
      r.read === 0
        ? t('scopeRefusalsNoCalls', { m: m })
        : r.refused === 0
          ? t('scopeRefusalsNone', { n: r.read, m: m, c: r.checked })
          : t('scopeRefusalsSummary', { n: r.read, m: m, c: r.checked, r: r.refused, x: r.newlyRefused });
    $('openapi-refusals-wrap').hidden = r.operations.length === 0;
    $('openapi-refusals-rows').replaceChildren.apply(
      $('openapi-refusals-rows'),
      r.operations.map(
        /** @param {ScopeRefusals} o */ function (o) {
          var ways = o.ways.map(function (w) {
            return el('li', { class: 'mono', text: w.length === 0 ? t('noScopeNeeded') : w.join(' ') });
          });
          var sample = o.sample.map(function (c) {
            return el('li', { 'data-transaction': c.id }, [
              el('a', { href: '../console/#/transactions/' + encodeURIComponent(c.id), class: 'mono', text: c.id.slice(0, 8) }),
              document.createTextNode(
                ' ' +
                  t('scopeRefusalsSample', {
                    m: c.method,
                    p: c.path,
                    who: c.clientId || c.subject || '?',
                    s: c.scopes.length === 0 ? t('noScopes') : c.scopes.join(' '),
                    st: c.status === null ? '—' : c.status,
                  }),
              ),
            ]);
          });
          return el('tr', { 'data-operation': o.operation || '' }, [
            el('td', { class: 'mono', text: o.operation || keyOf(currentApi()) }),
            el('td', {}, [el('ul', { role: 'list', class: 'ways' }, ways)]),
            el('td', { class: 'num', text: o.checked }),
            el('td', { class: 'num', text: o.refused }),
            el('td', { class: 'num', text: o.newlyRefused }),
            el('td', {}, [el('ul', { role: 'list', class: 'sample' }, sample)]),
          ]);
        },
      ),
    );
    var notes = [];
    if (r.truncated) notes.push(el('li', { 'data-note': 'truncated', text: t('twTruncated', { n: r.read }) }));
    if (r.noToken > 0) notes.push(el('li', { 'data-note': 'no-token', text: t('scopeRefusalsNoToken', { n: r.noToken }) }));
    if (r.noOperation > 0) notes.push(el('li', { 'data-note': 'no-operation', text: t('scopeRefusalsNoOperation', { n: r.noOperation }) }));
    $('openapi-refusals-notes').replaceChildren.apply($('openapi-refusals-notes'), notes);
  }
  /** @param {boolean} dryRun */
  function importOpenApi(dryRun) {
    var api = currentApi();
    var files = $('openapi-file').files;
    var file = files && files[0];
    $('openapi-result').replaceChildren();
    $('openapi-errors').replaceChildren();
    $('openapi-refusals').hidden = true;
    if (!api) return Promise.resolve();
    if (!file) {
      $('openapi-errors').replaceChildren(el('li', { text: t('chooseFile') }));
      $('openapi-file').focus();
      return Promise.resolve();
    }
    if (file.size > 2 * 1024 * 1024) {
      $('openapi-errors').replaceChildren(el('li', { text: t('fileTooLarge') }));
      return Promise.resolve();
    }
    return file.text().then(function (text) {
      var body = {
        text: text,
        mode: $('openapi-mode').value,
        dryRun: dryRun,
        whatIf: dryRun ? { minutes: Number($('openapi-minutes').value) } : undefined,
        comment: $('api-comment').value,
        baseVersion: state.config.version.version,
      };
      return call('POST', 'api/apis/' + pathOf(api) + '/operations/openapi', body).then(function (a) {
        if (!a.ok) {
          showIssues($('openapi-errors'), a);
          return;
        }
        if (dryRun) {
          importChanges(a.body, true);
          return;
        }
        $('api-comment').value = '';
        $('openapi-file').value = '';
        importChanges(a.body, false);
        return refreshAfterSave().then(function () {
          saved(a, $('openapi-errors'));
        });
      });
    });
  }
  function removeApi() {
    var api = currentApi();
    if (!api || !window.confirm(t('confirmRemove', { k: keyOf(api) }))) return;
    return call('DELETE', 'api/apis/' + pathOf(api), { comment: $('api-comment').value, baseVersion: state.config.version.version }).then(
      function (a) {
        if (saved(a, $('api-errors'))) {
          state.selected = null;
          return refreshAfterSave();
        }
      },
    );
  }
  /** @param {SubmitEvent} event */
  function addApi(event) {
    event.preventDefault();
    var version = $('new-version').value.trim();
    var api = {
      provider: $('new-provider').value.trim(),
      name: $('new-name').value.trim(),
      version: /^\d+$/.test(version) ? Number(version) : version,
      backend: { url: $('new-backend').value.trim() },
    };
    return call('POST', 'api/apis', { api: api, baseVersion: state.config.version.version }).then(function (a) {
      if (saved(a, $('add-api-errors'))) {
        state.selected = keyOf(api);
        $('add-api').reset();
        return refreshAfterSave();
      }
    });
  }

  // ---- policy editor -------------------------------------------------------------------------

  function loadPolicy() {
    var api = currentApi();
    $('policy-api').textContent = api ? keyOf(api) : '—';
    $('policy-errors').replaceChildren();
    if (!api || !state.whatIf || state.whatIf.api !== keyOf(api)) clearWhatIf();
    if (!api || !api.authorization || api.authorization.mode !== 'xacml-Policy') {
      $('policy-file').textContent = t('noPolicy');
      $('policy-text').value = '';
      state.loadedPolicy = null;
      $('policy-text').disabled = true;
      renderGutter();
      return Promise.resolve();
    }
    $('policy-text').disabled = false;
    return call('GET', 'api/apis/' + pathOf(api) + '/policy').then(function (a) {
      if (!a.ok) {
        $('policy-file').textContent = detailOf(a);
        return;
      }
      $('policy-file').textContent = a.body.file + (allows('admin') ? '' : ' — ' + t('checkOnly'));
      // A draft being edited stays in the editor when the same policy is read again (a language
      // switch, a refresh after another save); otherwise the saved text is shown.
      var loaded = state.loadedPolicy;
      var editing = loaded && loaded.api === keyOf(api) && $('policy-text').value !== loaded.text;
      state.loadedPolicy = { api: keyOf(api), text: a.body.text || '' };
      if (!editing) $('policy-text').value = a.body.text || '';
      renderGutter();
      whatIfStale();
    });
  }
  /** @param {number} [bad] the line to mark */
  function renderGutter(bad) {
    var lines = $('policy-text').value.split('\n').length;
    var spans = [];
    for (var i = 1; i <= lines; i++) spans.push(el('span', { class: i === bad ? 'bad' : undefined, text: String(i) }));
    $('gutter').replaceChildren.apply($('gutter'), spans);
    $('gutter').scrollTop = $('policy-text').scrollTop;
  }
  /**
   * @param {number} line
   * @param {boolean} [keepFocus]
   */
  function goToLine(line, keepFocus) {
    var area = $('policy-text');
    var lines = area.value.split('\n');
    var start = 0;
    for (var i = 0; i < line - 1 && i < lines.length; i++) start += lines[i].length + 1;
    var end = start + (lines[line - 1] || '').length;
    if (!keepFocus) area.focus();
    area.setSelectionRange(start, end);
    var height = parseFloat(window.getComputedStyle(area).lineHeight) || 16;
    area.scrollTop = Math.max(0, (line - 4) * height);
    renderGutter(line);
  }
  function checkPolicy() {
    return call('POST', 'api/policies/check', { text: $('policy-text').value }).then(function (a) {
      if (a.ok && a.body.valid) {
        $('policy-errors').replaceChildren(el('li', { class: 'ok', text: t('policyValid') }));
        renderGutter();
        return;
      }
      showIssues($('policy-errors'), a.ok ? { body: { issues: a.body.issues }, status: 422 } : a, goToLine);
    });
  }
  function savePolicy() {
    var api = currentApi();
    return call('PUT', 'api/apis/' + pathOf(api) + '/policy', {
      text: $('policy-text').value,
      comment: $('policy-comment').value,
      baseVersion: state.config.version.version,
    }).then(function (a) {
      if (saved(a, $('policy-errors'), { onLine: goToLine })) {
        // The what-if described the draft against what was saved before: it no longer says anything true.
        clearWhatIf();
        $('policy-comment').value = '';
        renderGutter();
        return refreshAfterSave().then(function () {
          saved(a, $('policy-errors'));
        });
      }
    });
  }

  // ---- what-if -------------------------------------------------------------------------------

  function clearWhatIf() {
    state.whatIf = null;
    $('whatif').hidden = true;
    $('whatif-changes').replaceChildren();
    $('whatif-notes').replaceChildren();
    $('whatif-summary').textContent = '';
  }
  function whatIfStale() {
    $('whatif-stale').hidden = !state.whatIf || state.whatIf.text === $('policy-text').value;
  }
  /** @param {string} decision */
  function decisionClass(decision) {
    return decision === 'Permit' ? 'to-permit' : decision === 'Deny' ? 'to-deny' : 'to-other';
  }
  function renderWhatIf() {
    var r = state.whatIf && state.whatIf.report;
    if (!r) return;
    $('whatif').hidden = false;
    $('whatif-summary').textContent =
      r.transactions === 0
        ? t('whatIfNoTransactions', { a: r.api })
        : t(r.changed.length > 0 ? 'whatIfChanged' : 'whatIfNone', { t: r.transactions, a: r.api, e: r.evaluated, c: r.changed.length });
    $('whatif-table-wrap').hidden = r.changed.length === 0;
    $('whatif-changes').replaceChildren.apply(
      $('whatif-changes'),
      r.changed.map(
        /** @param {WhatIfChange} c */ function (c) {
          var link = el('a', {
            href: '../console/#/transactions/' + encodeURIComponent(c.id),
            target: '_blank',
            rel: 'noopener noreferrer',
            'aria-label': t('openTransaction', { id: c.id }),
            class: 'mono',
            text: c.id,
          });
          var who = c.caller.clientId || c.caller.subject || '—';
          if (c.caller.subject && c.caller.clientId && c.caller.subject !== c.caller.clientId) who += ' (' + c.caller.subject + ')';
          var recorded = c.recorded.decision + (c.recorded.rule ? ' — ' + t('ruleOf', { r: c.recorded.rule }) : '');
          var rule = c.draft.rule
            ? t('ruleOf', { r: c.draft.rule }) + (c.draft.policy ? ' (' + c.draft.policy + ')' : '')
            : c.draft.path && c.draft.path.length
              ? c.draft.path.join(' > ')
              : '—';
          if (c.draft.statusMessage) rule += ' — ' + c.draft.statusMessage;
          return el('tr', { 'data-transaction': c.id }, [
            el('td', {}, [link, c.incomplete ? el('span', { class: 'note', text: ' (' + t('incompleteRequest') + ')' }) : null]),
            el('td', { text: fmtTime(c.time) }),
            el('td', { text: who }),
            el('td', { text: (c.method || '') + (c.operation ? ' ' + c.operation : '') }),
            el('td', {}, [
              el('span', { class: decisionClass(c.recorded.decision), text: recorded }),
              c.status ? ' (' + c.status + ')' : null,
            ]),
            el('td', {}, [el('span', { class: decisionClass(c.draft.decision), text: c.draft.decision })]),
            el('td', { text: rule }),
          ]);
        },
      ),
    );
    var notes = [];
    /** @type {Record<string, string>} */
    var keys = { permit: 'skipPermit', noAuthorization: 'skipNoAuthorization', noRequest: 'skipNoRequest', unreadable: 'skipUnreadable' };
    (r.skipped || []).forEach(
      /** @param {WhatIfSkip} s */ function (s) {
        notes.push(
          el('li', { 'data-skipped': s.reason, text: keys[s.reason] ? t(keys[s.reason], { n: s.count }) : s.count + ' ' + s.why }),
        );
      },
    );
    if (r.requestedLimit !== undefined) notes.push(el('li', { text: t('whatIfCapped', { r: r.requestedLimit, n: r.limit }) }));
    if (r.scanLimited) notes.push(el('li', { text: t('whatIfScanLimited') }));
    $('whatif-notes').replaceChildren.apply($('whatif-notes'), notes);
    whatIfStale();
  }
  function runWhatIf() {
    var api = currentApi();
    if (!api) return Promise.resolve();
    var text = $('policy-text').value;
    var limit = $('whatif-limit').value.trim();
    var button = $('policy-whatif');
    button.disabled = true;
    $('policy-errors').replaceChildren();
    return call('POST', 'api/apis/' + pathOf(api) + '/policy/what-if', {
      text: text,
      limit: /^\d+$/.test(limit) ? Number(limit) : limit,
    }).then(function (a) {
      button.disabled = false;
      if (!a.ok) {
        clearWhatIf();
        showIssues($('policy-errors'), a, goToLine);
        return;
      }
      renderGutter();
      state.whatIf = { api: keyOf(api), text: text, report: a.body };
      renderWhatIf();
      $('whatif-heading').focus();
      return loadAudit();
    });
  }

  // ---- traffic control -----------------------------------------------------------------------

  var POLICY_FIELDS = ['name', 'metric', 'limit', 'windowSeconds', 'window', 'groupBy', 'operations', 'mode'];

  /**
   * The policy form's control of a field.
   * @param {string} field
   * @returns {Control}
   */
  function tpInput(field) {
    return /** @type {Control} */ ($('tp-form').querySelector('[data-tp="' + field + '"]'));
  }
  function canEditTraffic() {
    return !!(state.config && state.config.canEditTraffic);
  }
  /** @param {string} key */
  function apiByKey(key) {
    return (
      ((state.config && state.config.document.apis) || []).filter(
        /** @param {ApiKey} x */ function (x) {
          return keyOf(x) === key;
        },
      )[0] || null
    );
  }
  /** The API path of a scope's traffic routes: '' is every API's. */
  /** @param {string} scope */
  function trafficPath(scope) {
    var api = scope === '' ? null : apiByKey(scope);
    return api ? 'api/apis/' + pathOf(api) + '/traffic' : 'api/traffic';
  }
  /** @param {string | null | undefined} scope */
  function scopeLabel(scope) {
    return scope === '' || scope === null || scope === undefined ? t('everyApi') : scope;
  }
  /** @param {string[] | undefined} value */
  function listText(value) {
    return value && value.length ? value.join(', ') : '';
  }
  /** @param {{ metric?: string, limit?: number, windowSeconds?: number, window?: string }} p */
  function limitText(p) {
    if (p.metric === 'concurrentRequests') return t('inFlightLimit', { l: p.limit });
    return (
      t('perWindow', { l: p.limit, w: p.windowSeconds === undefined ? '?' : p.windowSeconds }) + (p.window ? ' (' + p.window + ')' : '')
    );
  }
  /**
   * Clears the messages next to a form's fields.
   * @param {Element} form
   */
  function clearFieldErrors(form) {
    Array.prototype.forEach.call(form.querySelectorAll('[data-error-for]'), function (node) {
      node.textContent = '';
    });
    Array.prototype.forEach.call(form.querySelectorAll('[aria-invalid]'), function (node) {
      node.removeAttribute('aria-invalid');
    });
  }
  /**
   * Puts each issue whose path `pattern` maps to a field next to that field (the list has them all).
   * @param {Element} form
   * @param {Answer} answer
   * @param {RegExp} pattern
   */
  function showFieldIssues(form, answer, pattern) {
    var issues = (answer.body && answer.body.issues) || [];
    issues.forEach(
      /** @param {Issue} issue */ function (issue) {
        var m = pattern.exec(issue.path || '');
        var target = m && form.querySelector('[data-error-for="' + m[1] + '"]');
        if (!target) return;
        target.textContent = (target.textContent ? target.textContent + ' ' : '') + issue.path + ': ' + issue.message;
        var input = target.parentNode && target.parentNode.querySelector('input, select');
        if (input) input.setAttribute('aria-invalid', 'true');
      },
    );
  }
  function renderTraffic() {
    var doc = state.config.document;
    var editable = canEditTraffic();
    var section = doc.trafficControl || {};
    Array.prototype.forEach.call($('traffic-settings').querySelectorAll('[data-setting]'), function (input) {
      var value = section[input.getAttribute('data-setting')];
      input.value = value === undefined || value === null ? '' : String(value);
      if (input.tagName === 'SELECT') input.disabled = !editable;
      else input.readOnly = !editable;
    });
    /** @type {HTMLElement[]} */
    var rows = [];
    var scopes = [''];
    (section.policies || []).forEach(
      /** @param {TrafficPolicy} p */ function (p) {
        rows.push(policyRow('', p, editable));
      },
    );
    (doc.apis || []).forEach(
      /** @param {ApiKey & { trafficControl?: { policies?: TrafficPolicy[] } }} api */ function (api) {
        scopes.push(keyOf(api));
        ((api.trafficControl && api.trafficControl.policies) || []).forEach(
          /** @param {TrafficPolicy} p */ function (p) {
            rows.push(policyRow(keyOf(api), p, editable));
          },
        );
      },
    );
    $('tp-list').replaceChildren.apply($('tp-list'), rows);
    $('tp-none').hidden = rows.length > 0;
    var scope = $('tp-scope');
    var chosen = scope.value;
    scope.replaceChildren.apply(
      scope,
      scopes.map(function (s) {
        return el('option', { value: s, text: scopeLabel(s) });
      }),
    );
    scope.value = scopes.indexOf(chosen) >= 0 ? chosen : '';
    Array.prototype.forEach.call($('tp-form').querySelectorAll('[data-tp]'), function (input) {
      if (input.tagName === 'SELECT') input.disabled = !editable;
      else input.readOnly = !editable;
    });
  }
  /**
   * @param {string} scope
   * @param {TrafficPolicy} p
   * @param {boolean} editable
   */
  function policyRow(scope, p, editable) {
    var action = el('td', {});
    if (editable) {
      var edit = el('button', { type: 'button', 'aria-label': t('edit') + ' ' + p.name, text: t('edit') });
      edit.addEventListener('click', function () {
        fillPolicyForm(scope, p);
        $('tp-title').focus();
      });
      var remove = el('button', { type: 'button', class: 'danger', 'aria-label': t('remove') + ' ' + p.name, text: t('remove') });
      remove.addEventListener('click', function () {
        removeTrafficPolicy(scope, p.name);
      });
      action.appendChild(edit);
      action.appendChild(document.createTextNode(' '));
      action.appendChild(remove);
    }
    return el('tr', { 'data-traffic-policy': scope + '|' + p.name }, [
      el('td', { text: scopeLabel(scope) }),
      el('td', { class: 'mono', text: p.name }),
      el('td', { text: limitText(p) }),
      el('td', { text: listText(p.groupBy) || '—' }),
      el('td', { text: listText(p.operations) || t('allOperations') }),
      el('td', { text: p.mode || 'enforce' }),
      action,
    ]);
  }
  /**
   * @param {string} scope
   * @param {TrafficPolicy | null} p
   */
  function fillPolicyForm(scope, p) {
    state.tp = p ? { scope: scope, name: p.name } : null;
    $('tp-title').textContent = p ? t('editTrafficPolicy', { n: p.name }) : t('newTrafficPolicy');
    $('tp-scope').value = scope;
    /** @type {Record<string, unknown>} */
    var values = p || { metric: 'requests' };
    POLICY_FIELDS.forEach(function (f) {
      var input = tpInput(f);
      var v = values[f];
      input.value = Array.isArray(v) ? v.join(', ') : v === undefined || v === null ? '' : String(v);
    });
    clearFieldErrors($('tp-form'));
    $('tp-errors').replaceChildren();
  }
  /** The policy the form holds, as typed: the API checks it (numbers that are not numbers are sent as typed). */
  function readPolicyForm() {
    /** @type {PolicyDraft} */
    var policy = {};
    POLICY_FIELDS.forEach(function (f) {
      var raw = tpInput(f).value.trim();
      if (raw === '') return;
      if (f === 'limit' || f === 'windowSeconds') policy[f] = /^\d+$/.test(raw) ? Number(raw) : raw;
      else if (f === 'groupBy' || f === 'operations')
        policy[f] = raw
          .split(',')
          .map(
            /** @param {string} x */ function (x) {
              return x.trim();
            },
          )
          .filter(Boolean);
      else policy[f] = raw;
    });
    return policy;
  }
  /** @param {Event} event */
  function saveTrafficSettings(event) {
    event.preventDefault();
    /** @type {Record<string, string | number>} */
    var settings = {};
    Array.prototype.forEach.call($('traffic-settings').querySelectorAll('[data-setting]'), function (input) {
      var raw = input.value.trim();
      if (raw === '') return;
      settings[input.getAttribute('data-setting') || ''] =
        input.getAttribute('data-setting') === 'maxConcurrentRequests' && /^\d+$/.test(raw) ? Number(raw) : raw;
    });
    clearFieldErrors($('traffic-settings'));
    return call('PUT', 'api/traffic/settings', { settings: settings, baseVersion: state.config.version.version }).then(function (a) {
      if (!saved(a, $('ts-errors'))) {
        showFieldIssues($('traffic-settings'), a, /^trafficControl\.([A-Za-z]+)$/);
        return;
      }
      return refreshAfterSave().then(function () {
        saved(a, $('ts-errors'));
      });
    });
  }
  /** @param {Event} event */
  function saveTrafficPolicy(event) {
    event.preventDefault();
    var scope = $('tp-scope').value;
    var policy = readPolicyForm();
    // A policy edited keeps its place (and may be renamed); one of another scope or a new one is added.
    var name = state.tp && state.tp.scope === scope ? state.tp.name : String(policy.name || '');
    clearFieldErrors($('tp-form'));
    return call('PUT', trafficPath(scope) + '/policies/' + encodeURIComponent(name), {
      policy: policy,
      comment: $('tp-comment').value,
      baseVersion: state.config.version.version,
    }).then(function (a) {
      if (!saved(a, $('tp-errors'))) {
        showFieldIssues($('tp-form'), a, /trafficControl\.policies\[\d+\]\.([A-Za-z]+)/);
        return;
      }
      state.tp = { scope: scope, name: String(policy.name) };
      $('tp-title').textContent = t('editTrafficPolicy', { n: String(policy.name) });
      $('tp-comment').value = '';
      return refreshAfterSave().then(function () {
        saved(a, $('tp-errors'));
      });
    });
  }
  /**
   * @param {string} scope
   * @param {string} name
   */
  function removeTrafficPolicy(scope, name) {
    if (!window.confirm(t('confirmRemovePolicy', { n: name, s: scopeLabel(scope) }))) return;
    return call('DELETE', trafficPath(scope) + '/policies/' + encodeURIComponent(name), { baseVersion: state.config.version.version }).then(
      function (a) {
        if (saved(a, $('tp-errors'))) {
          if (state.tp && state.tp.scope === scope && state.tp.name === name) fillPolicyForm(scope, null);
          return refreshAfterSave();
        }
      },
    );
  }

  // ---- traffic what-if -----------------------------------------------------------------------

  function runTrafficWhatIf() {
    var scope = $('tp-scope').value;
    var limit = $('tw-limit').value.trim();
    var button = $('tw-run');
    button.disabled = true;
    clearFieldErrors($('tp-form'));
    $('tp-errors').replaceChildren();
    return call('POST', trafficPath(scope) + '/what-if', {
      policy: readPolicyForm(),
      minutes: Number($('tw-minutes').value),
      limit: /^\d+$/.test(limit) ? Number(limit) : limit,
    }).then(function (a) {
      button.disabled = false;
      if (!a.ok) {
        state.trafficWhatIf = null;
        $('traffic-whatif').hidden = true;
        showIssues($('tp-errors'), a);
        showFieldIssues($('tp-form'), a, /trafficControl\.policies\[\d+\]\.([A-Za-z]+)/);
        return;
      }
      state.trafficWhatIf = a.body;
      renderTrafficWhatIf();
      $('tw-heading').focus();
      return loadAudit();
    });
  }
  function renderTrafficWhatIf() {
    var r = state.trafficWhatIf;
    if (!r) return;
    $('traffic-whatif').hidden = false;
    var where = scopeLabel(r.scope);
    $('tw-summary').textContent =
      r.read === 0
        ? t('twNone', { m: r.window.minutes, s: where })
        : t('twSummary', { n: r.read, m: r.window.minutes, s: where, r: r.refused, c: r.covered, p: r.policy });
    $('tw-table-wrap').hidden = r.groups.length === 0;
    $('tw-groups').replaceChildren.apply(
      $('tw-groups'),
      r.groups.map(
        /** @param {WhatIfGroup} g */ function (g) {
          return el('tr', { 'data-group': g.group }, [
            el('td', { class: 'mono', text: g.group }),
            el('td', { class: 'num', text: g.allowed }),
            el('td', { class: 'num', text: g.refused }),
          ]);
        },
      ),
    );
    var notes = [];
    if (r.truncated) notes.push(el('li', { 'data-note': 'truncated', text: t('twTruncated', { n: r.read }) }));
    if (r.requestedLimit !== undefined) notes.push(el('li', { text: t('whatIfCapped', { r: r.requestedLimit, n: r.limit }) }));
    if (r.beforeTrafficControl > 0) notes.push(el('li', { 'data-note': 'before', text: t('twBefore', { n: r.beforeTrafficControl }) }));
    if (r.read > 0) notes.push(el('li', { text: t('twGroups', { g: r.groupCount }) }));
    $('tw-notes').replaceChildren.apply($('tw-notes'), notes);
  }

  // ---- traffic usage -------------------------------------------------------------------------

  function loadUsage() {
    return call('GET', 'api/traffic/usage?top=10').then(function (a) {
      if (!a.ok) {
        $('usage-note').textContent = detailOf(a);
        return;
      }
      var policies = a.body.policies;
      $('usage-note').textContent = policies.length === 0 ? t('usageNone') : t(a.body.store === 'redis' ? 'usageRedis' : 'usageLocal');
      $('usage').replaceChildren.apply(
        $('usage'),
        policies.map(
          /** @param {PolicyUsage} p */ function (p) {
            var rows = p.groups.map(
              /** @param {UsageGroup} g */ function (g) {
                return el('tr', { 'data-group': g.group }, [
                  el('td', { class: 'mono', text: g.group }),
                  el('td', { class: 'used', text: g.used + ' / ' + g.limit }),
                  el('td', {}, [
                    el('meter', {
                      min: 0,
                      max: g.limit,
                      high: Math.max(1, Math.floor(g.limit * 0.8)),
                      value: Math.min(g.used, g.limit),
                      'aria-label': t('usedOf', { u: g.used, l: g.limit, g: g.group }),
                    }),
                  ]),
                ]);
              },
            );
            return el('div', { 'data-usage': (p.scope || '') + '|' + p.policy }, [
              el('h4', { text: p.policy + ' — ' + scopeLabel(p.scope) + ' — ' + limitText(p) }),
              rows.length === 0
                ? el('p', { class: 'note', text: t('usageIdle') })
                : el('table', {}, [
                    el('caption', { class: 'visually-hidden', text: t('usageCaption', { p: p.policy }) }),
                    el('thead', {}, [
                      el('tr', {}, [
                        el('th', { scope: 'col', text: t('group') }),
                        el('th', { scope: 'col', text: t('usedLimit') }),
                        el('th', { scope: 'col', text: t('usageBar') }),
                      ]),
                    ]),
                    el('tbody', {}, rows),
                  ]),
            ]);
          },
        ),
      );
    });
  }

  // ---- token policies ------------------------------------------------------------------------

  /** @param {SecretSource | undefined} s */
  function secretText(s) {
    if (!s) return t('secretNone');
    if (s.from === 'env') return s.set ? t('secretEnv', { v: s.variable }) : t('secretEnvMissing', { v: s.variable });
    return s.from === 'file' ? t('secretFile') : t('secretNone');
  }
  function renderTokenPolicies() {
    var policies = state.config.document.tokenPolicies || {};
    var editable = allows('admin');
    $('token-policies').replaceChildren.apply(
      $('token-policies'),
      Object.keys(policies).map(function (name) {
        var p = policies[name];
        var id = 'tp-' + name.replace(/[^A-Za-z0-9_-]/g, '_');
        var fields = [
          ['issuer', t('issuer'), p.issuer],
          ['clientId', t('clientIdField'), p.clientId],
          ['cacheTtlSeconds', t('cacheTtl'), p.cacheTtlSeconds],
          ['timeoutMs', t('policyTimeoutMs'), p.timeoutMs],
        ];
        var form = /** @type {Control} */ (
          el(
            'form',
            { class: 'card stack', 'data-policy': name },
            /** @type {Array<HTMLElement | null>} */ ([el('h3', { text: name })])
              .concat(
                fields.map(function (f) {
                  return el('div', { class: 'field' }, [
                    el('label', { for: id + '-' + f[0], text: f[1] }),
                    el('input', {
                      id: id + '-' + f[0],
                      name: f[0],
                      value: f[2] === undefined ? '' : String(f[2]),
                      readonly: editable ? undefined : 'readonly',
                    }),
                  ]);
                }),
              )
              .concat([
                // RFC 9701: `true`, or an object of its settings (kept as it is while the box stays checked).
                el('label', { class: 'check' }, [
                  el('input', {
                    type: 'checkbox',
                    id: id + '-signedIntrospection',
                    name: 'signedIntrospection',
                    checked: p.signedIntrospection !== undefined && p.signedIntrospection !== false ? 'checked' : undefined,
                    disabled: editable ? undefined : 'disabled',
                  }),
                  ' ',
                  el('span', { text: t('signedIntrospection') }),
                ]),
                el('p', { class: 'note' }, [
                  t('clientSecret') + ': ',
                  el('span', { class: 'secret-state', text: secretText(state.config.secrets[name]) }),
                ]),
                editable
                  ? el('div', { class: 'field' }, [
                      el('label', { for: id + '-secret', text: t('newSecret') }),
                      el('input', { id: id + '-secret', name: 'clientSecret', type: 'password', autocomplete: 'new-password' }),
                    ])
                  : null,
                editable ? el('div', { class: 'actions' }, [el('button', { type: 'submit', class: 'primary', text: t('save') })]) : null,
                el('ul', { class: 'errors', role: 'alert' }),
              ]),
          )
        );
        form.addEventListener(
          'submit',
          /** @param {SubmitEvent} event */ function (event) {
            event.preventDefault();
            var next = JSON.parse(JSON.stringify(p));
            ['issuer', 'clientId'].forEach(function (k) {
              next[k] = form.elements[k].value.trim();
            });
            ['cacheTtlSeconds', 'timeoutMs'].forEach(function (k) {
              var v = form.elements[k].value.trim();
              if (v === '') delete next[k];
              else next[k] = /^\d+(\.\d+)?$/.test(v) ? Number(v) : v;
            });
            if (!form.elements.signedIntrospection.checked) delete next.signedIntrospection;
            else if (next.signedIntrospection === undefined || next.signedIntrospection === false) next.signedIntrospection = true;
            var secret = form.elements.clientSecret.value;
            if (secret !== '') {
              next.clientSecret = secret;
              delete next.clientSecretEnv;
            }
            call('PUT', 'api/token-policies/' + encodeURIComponent(name), { policy: next, baseVersion: state.config.version.version }).then(
              function (a) {
                var list = /** @type {Element} */ (form.querySelector('ul.errors'));
                if (saved(a, list)) return refreshAfterSave();
              },
            );
          },
        );
        return form;
      }),
    );
  }

  // ---- versions ------------------------------------------------------------------------------

  function loadVersions() {
    return call('GET', 'api/versions').then(function (a) {
      if (!a.ok) return;
      state.versions = a.body.items;
      $('versions').replaceChildren.apply(
        $('versions'),
        state.versions.map(
          /** @param {Version} v @param {number} index */ function (v, index) {
            var action = el('td', {});
            if (allows('admin') && index > 0) {
              var back = el('button', { type: 'button', 'aria-label': t('rollback') + ' ' + v.version, text: t('rollback') });
              back.addEventListener('click', function () {
                rollback(v.version);
              });
              action.appendChild(back);
            }
            return el('tr', { 'data-version': v.version }, [
              el('td', { class: 'num', text: v.version }),
              el('td', { text: fmtTime(v.time) }),
              el('td', { text: v.author }),
              el('td', { text: v.comment }),
              action,
            ]);
          },
        ),
      );
      var options = /** @param {number | undefined} selected */ function (selected) {
        return state.versions.map(
          /** @param {Version} v */ function (v) {
            return el('option', { value: v.version, selected: v.version === selected ? 'selected' : undefined, text: String(v.version) });
          },
        );
      };
      var latest = state.versions[0] ? state.versions[0].version : undefined;
      $('diff-from').replaceChildren.apply($('diff-from'), options(state.versions[1] ? state.versions[1].version : latest));
      $('diff-to').replaceChildren.apply($('diff-to'), options(latest));
    });
  }
  /** @param {SubmitEvent} event */
  function compare(event) {
    event.preventDefault();
    return call('GET', 'api/diff?from=' + encodeURIComponent($('diff-from').value) + '&to=' + encodeURIComponent($('diff-to').value)).then(
      function (a) {
        if (!a.ok) {
          $('diff').replaceChildren(el('p', { class: 'error', text: detailOf(a) }));
          return;
        }
        if (a.body.files.length === 0) {
          $('diff').replaceChildren(el('p', { class: 'note', text: t('noDiff') }));
          return;
        }
        $('diff').replaceChildren.apply(
          $('diff'),
          a.body.files.map(
            /** @param {DiffFile} f */ function (f) {
              /** @type {HTMLElement[]} */
              var rows = [];
              /** @type {number | null} */
              var last = null;
              f.lines.forEach(function (l) {
                var here = l.oldLine !== undefined ? l.oldLine : null;
                if (last !== null && here !== null && here > last + 1)
                  rows.push(el('tr', { class: 'gap' }, [el('td', { colspan: 4, text: '…' })]));
                if (here !== null) last = here;
                rows.push(
                  el('tr', { class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : undefined }, [
                    el('td', { class: 'ln', text: l.oldLine === undefined ? '' : l.oldLine }),
                    el('td', { class: 'ln', text: l.newLine === undefined ? '' : l.newLine }),
                    el('td', { 'aria-hidden': 'true', text: l.op }),
                    el('td', { text: l.text, 'data-op': l.op }),
                  ]),
                );
              });
              return el('section', {}, [
                el('h3', { text: f.file }),
                el('table', {}, [el('caption', { class: 'visually-hidden', text: f.file }), el('tbody', {}, rows)]),
              ]);
            },
          ),
        );
      },
    );
  }
  /** @param {number} version */
  function rollback(version) {
    if (!window.confirm(t('confirmRollback', { v: version }))) return;
    return call('POST', 'api/versions/' + version + '/rollback', {}).then(function (a) {
      if (a.ok) {
        say(t('saved', { v: a.body.version.version }));
        return refreshAfterSave();
      }
      say(detailOf(a));
    });
  }

  // ---- audit ---------------------------------------------------------------------------------

  function loadAudit() {
    if (!allows('operator')) return Promise.resolve();
    return call('GET', '../operators/audit?limit=200').then(function (a) {
      if (!a.ok) return;
      $('audit').replaceChildren.apply(
        $('audit'),
        a.body.items.map(
          /** @param {AuditEntry} e */ function (e) {
            return el('tr', { 'data-action': e.action }, [
              el('td', { text: fmtTime(e.time) }),
              el('td', { text: (e.actor || '—') + (e.role ? ' (' + e.role + ')' : '') }),
              el('td', { class: 'mono', text: e.address }),
              el('td', { text: e.action }),
              el('td', { text: e.target || '' }),
              el('td', { class: 'result-' + e.result, text: e.result + (e.status ? ' ' + e.status : '') }),
              el('td', { text: e.detail || '' }),
            ]);
          },
        ),
      );
    });
  }
  /** @param {string} format */
  function exportAudit(format) {
    var headers = Object.assign({}, HEADERS);
    return fetch('../operators/audit/export?format=' + format, { headers: headers, credentials: 'same-origin' }).then(function (res) {
      if (!res.ok) {
        say('HTTP ' + res.status);
        return;
      }
      var name = (/filename="([^"]+)"/.exec(res.headers.get('content-disposition') || '') || [])[1] || 'gateway-audit.' + format;
      return res.blob().then(function (blob) {
        var url = URL.createObjectURL(blob);
        var a = el('a', { href: url, download: name });
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(function () {
          URL.revokeObjectURL(url);
        }, 1000);
      });
    });
  }

  // ---- wiring --------------------------------------------------------------------------------

  function init() {
    state.lang = openingLanguage();
    $('lang').value = state.lang;
    translate();
    $('lang').addEventListener('change', function () {
      state.lang = $('lang').value;
      try {
        window.localStorage.setItem(LANG_KEY, state.lang);
      } catch (e) {
        /* private mode */
      }
      translate();
      if (state.me) {
        $('who').textContent = t('signedInAs', { u: state.me.username, r: state.me.role });
        renderWhatIf();
        renderTrafficWhatIf();
        loadAll();
      }
    });
    $('sign-in').addEventListener('submit', function (event) {
      event.preventDefault();
      $('sign-in-error').textContent = '';
      call('POST', '../operators/session', { username: $('si-user').value, password: $('si-pass').value }).then(function (a) {
        $('si-pass').value = '';
        if (a.ok) signedIn(a.body);
        else $('sign-in-error').textContent = t('signInFailed', { d: detailOf(a) });
      });
    });
    $('sign-out').addEventListener('click', function () {
      call('DELETE', '../operators/session').then(signedOut);
    });
    $('reset').addEventListener('click', reset);
    $('forget').addEventListener('submit', forget);
    $('api-form').addEventListener('submit', saveApi);
    $('op-add').addEventListener('click', addOperation);
    $('openapi-preview').addEventListener('click', function () {
      importOpenApi(true);
    });
    $('openapi-save').addEventListener('click', function () {
      importOpenApi(false);
    });
    $('api-remove').addEventListener('click', removeApi);
    $('add-api').addEventListener('submit', addApi);
    $('policy-check').addEventListener('click', checkPolicy);
    $('policy-save').addEventListener('click', savePolicy);
    $('policy-whatif').addEventListener('click', runWhatIf);
    $('policy-text').addEventListener('input', function () {
      renderGutter();
      whatIfStale();
    });
    $('policy-text').addEventListener('scroll', function () {
      $('gutter').scrollTop = $('policy-text').scrollTop;
    });
    $('policy-text').addEventListener('keydown', function (event) {
      // Tab indents; Escape then Tab leaves the editor (keyboard users are never trapped).
      if (event.key === 'Escape') {
        state.escaped = true;
        return;
      }
      var editor = /** @type {HTMLTextAreaElement} */ (event.target);
      if (event.key === 'Tab' && !event.shiftKey && !state.escaped && !editor.readOnly) {
        event.preventDefault();
        editor.setRangeText('  ', editor.selectionStart, editor.selectionEnd, 'end');
        renderGutter();
      }
      state.escaped = false;
    });
    $('traffic-settings').addEventListener('submit', saveTrafficSettings);
    $('tp-form').addEventListener('submit', saveTrafficPolicy);
    $('tp-new').addEventListener('click', function () {
      fillPolicyForm($('tp-scope').value, null);
      $('tp-name').focus();
    });
    $('tw-run').addEventListener('click', runTrafficWhatIf);
    $('usage-refresh').addEventListener('click', loadUsage);
    $('compare').addEventListener('submit', compare);
    $('audit-refresh').addEventListener('click', loadAudit);
    $('audit-json').addEventListener('click', function () {
      exportAudit('json');
    });
    $('audit-csv').addEventListener('click', function () {
      exportAudit('csv');
    });
    call('GET', '../operators/session').then(function (a) {
      if (a.ok && a.body.signedIn) signedIn(a.body);
      else signedOut();
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();

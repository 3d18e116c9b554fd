// @ts-check
// Monitoring console page script. Every value goes into the page with textContent or
// setAttribute: no HTML is ever built from data.

/**
 * What the script reads of the console API's answers (src/monitoring/, the record model of
 * src/record/): the members it uses, as the server sends them.
 * @typedef {{ provider: string, name: string, version: number }} ApiRef An API a record names.
 * @typedef {{ code?: string, label?: string }} Outcome A record's outcome (its code, the catalogue's label).
 * @typedef {{ subject?: string, clientId?: string, username?: string, issuer?: string }} Sender Who sent a request.
 * @typedef {{ time: number, level: string, code: string, message: string }} Diagnostic A line of a request's diagnostics.
 * @typedef {{ size: number, kept?: number, truncated?: boolean, contentType?: string, encoding?: string, content: unknown }} RecordedBody
 *   A recorded body.
 * @typedef {{ failure?: { part: string, failed?: string[], message?: string }, parents?: unknown[], kind: string, id: string,
 *   effect?: string, decision: string }} XacmlStep An element the XACML evaluation went through.
 * @typedef {{ decidedBy?: { rule?: string, policy?: string, path?: Array<{ kind: string, id: string }> }, steps?: XacmlStep[],
 *   omittedSteps?: number }} XacmlExplanation Why a decision was taken.
 * @typedef {{ id: string, values: unknown }} XacmlAttribute An attribute of a recorded XACML request.
 * @typedef {{ decision: string, text: string, explanation?: XacmlExplanation,
 *   request?: Record<string, XacmlAttribute[] | undefined> & { incomplete?: boolean } }} Authorization A record's authorization.
 * @typedef {{ kind: string, thumbprint: string, result: string, reason?: string, presented?: string }} Binding
 *   A token's sender constraint as the gateway checked it (certificate-bound: `x5t#S256`).
 * @typedef {{ method?: string, policy?: string, introspection?: unknown, jwt?: unknown, userInfo?: unknown }} TokenInfo
 *   The token a record keeps (its claims, never the token).
 * @typedef {{ id: string, messageId?: string, traceId?: unknown, startedAt: number, durationMs?: number, api?: ApiRef,
 *   operation?: string, method: string, url: string, status: number | null, gatewayStatus?: string, errorCode?: string,
 *   problemDetail?: unknown, outcome?: Outcome, sender?: Sender, clientAddress?: string, nodeId?: string,
 *   authorization?: Authorization, tokenInfo?: TokenInfo, binding?: Binding, diagnostics?: Diagnostic[],
 *   incoming?: { headers?: Record<string, unknown> }, outgoing?: { headers?: Record<string, unknown> },
 *   requestBody?: RecordedBody, responseBody?: RecordedBody, traffic?: Traffic }} Transaction A transaction record.
 * @typedef {{ policy: string, mode: string, metric: string, group: string, limit: number, windowSeconds?: number,
 *   remaining: number, exceeded: boolean }} TrafficStanding Where a traffic policy stood for a request.
 * @typedef {{ result: string, policy?: string, group?: string, storeUnavailable?: string, warnings?: string[],
 *   policies: TrafficStanding[] }} Traffic What traffic control decided on a request.
 * @typedef {{ value: string, count: number }} TopEntry A value of the statistics' top lists and its count.
 * @typedef {{ start: number, counts: Record<string, number> }} Bucket A bar of the chart: the counts by outcome of a span.
 * @typedef {{ from: number, to: number, buckets: Bucket[],
 *   totals: { count: number, byOutcome: Record<string, number>, meanDurationMs?: number, p95DurationMs?: number },
 *   top?: Record<'api' | 'operation' | 'clientId' | 'status' | 'gatewayStatus', TopEntry[]> }} Stats The statistics of a window.
 * @typedef {{ res: Response, body: any }} CallResult A call's answer: the response, and its body as parsed (null when not JSON).
 */

(function () {
  'use strict';
  var LABELS = __OUTCOME_LABELS__;
  var GROUPS = __OUTCOME_GROUPS__;
  /** @type {Readonly<Record<string, Readonly<Record<string, string>>>>} The texts by language. */
  var TEXTS = __TEXTS__;
  var EXPORT_COLUMNS = __EXPORT_COLUMNS__;
  var DEFAULT_COLUMNS = __DEFAULT_COLUMNS__;
  var ORDER = Object.keys(LABELS);
  var PAGE_SIZE = 100;
  var REFRESH_MS = 5000;
  var SVG = 'http://www.w3.org/2000/svg';
  var TIME_CLAIMS = ['exp', 'iat', 'nbf', 'auth_time', 'updated_at'];
  /** @type {Readonly<Record<string, number>>} The preset windows' spans, milliseconds. */
  var WINDOWS = { '15m': 15 * 60000, '1h': 3600000, '24h': 86400000, '7d': 7 * 86400000 };
  var DEFAULT_WINDOW = '24h';
  var TEXT_FILTERS = [
    'api',
    'operation',
    'method',
    'status',
    'gatewayStatus',
    'subject',
    'clientId',
    'username',
    'issuer',
    'claim',
    'clientAddress',
    'trafficPolicy',
    'nodeId',
    'minDurationMs',
  ];

  /**
   * The page's window: a preset, or `custom` with its bounds (epoch ms).
   * @typedef {{ preset: string, from?: number, to?: number }} Win
   */
  /**
   * What the page shows and how. `items` and `stats` are the console API's answers, as it sends them.
   * @type {{
   *   items: Transaction[], next: string | null, filter: Record<string, string>, win: Win,
   *   range: { from: number, to: number } | null, stats: Stats | null, timer: number | null, seq: number,
   *   statsSeq: number, returnFocusId: string | null, returnHash: string, view: string,
   *   lang: 'it' | 'en', zone: 'local' | 'utc',
   * }}
   */
  var state = {
    items: [],
    next: null,
    filter: {},
    win: { preset: DEFAULT_WINDOW },
    range: null,
    stats: null,
    timer: null,
    seq: 0,
    statsSeq: 0,
    returnFocusId: null,
    returnHash: '#/',
    view: 'list',
    lang: 'it',
    zone: 'local',
  };

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
   * What an element is made of: attributes (`text`: its text content; a missing value is left
   * out) and children (a missing one is left out).
   * @typedef {Record<string, unknown> | null | undefined} Attrs
   * @typedef {Array<Node | string | number | null | undefined | false>} Children
   */
  /**
   * @param {string} tag
   * @param {Attrs} [attrs]
   * @param {Children} [children]
   * @returns {HTMLElement}
   */
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  /**
   * @param {string} tag
   * @param {Attrs} [attrs]
   * @param {Children} [children]
   * @returns {Element}
   */
  function svg(tag, attrs, children) {
    var node = document.createElementNS(SVG, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  /**
   * @param {Element} node
   * @param {Attrs} attrs
   */
  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === undefined || v === null || v === false) return;
      if (k === 'text') node.textContent = String(v);
      else node.setAttribute(k, String(v));
    });
  }
  /**
   * @param {Element} node
   * @param {Children | undefined} children
   */
  function append(node, children) {
    if (!children) return;
    children.forEach(function (c) {
      if (c === undefined || c === null || c === false) return;
      node.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    });
  }

  // ---- language --------------------------------------------------------------------------------

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
  /** @param {string} code an outcome code */
  function label(code) {
    return LABELS[code] ? LABELS[code][state.lang] : code;
  }

  /**
   * @param {string} name
   * @param {string} value
   */
  function remember(name, value) {
    try {
      window.localStorage.setItem('gateway-console-' + name, value);
    } catch (e) {
      /* private mode */
    }
  }
  /** @param {string} name */
  function recall(name) {
    try {
      return window.localStorage.getItem('gateway-console-' + name);
    } catch (e) {
      return null;
    }
  }

  /**
   * The language the page opens in, the same rule as the configuration console's: the operator's
   * choice on the switch (remembered by the browser, shared by both consoles), else the first of
   * the browser's languages that is Italian or English, else the gateway's message language.
   * @param {string | null} stored
   * @returns {'it' | 'en'}
   */
  function openingLanguage(stored) {
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

  function applyLanguage() {
    document.documentElement.lang = state.lang;
    document.title = t('title');
    document.querySelectorAll('[data-i18n]').forEach(function (node) {
      node.textContent = t(/** @type {string} */ (node.getAttribute('data-i18n')));
    });
    document.querySelectorAll('[data-i18n-label]').forEach(function (node) {
      node.setAttribute('aria-label', t(/** @type {string} */ (node.getAttribute('data-i18n-label'))));
    });
    $('lang').value = state.lang;
    buildOutcomeChoices();
  }

  // ---- times -------------------------------------------------------------------------------------

  /**
   * @param {number} n
   * @param {number} [w] the width, 2 by default
   */
  function pad(n, w) {
    return String(n).padStart(w || 2, '0');
  }
  /**
   * A time's fields in the zone shown, or null when it is no time.
   * @param {number} ms epoch milliseconds
   */
  function parts(ms) {
    var d = new Date(ms);
    if (!isFinite(d.getTime())) return null;
    var utc = state.zone === 'utc';
    return {
      y: utc ? d.getUTCFullYear() : d.getFullYear(),
      mo: (utc ? d.getUTCMonth() : d.getMonth()) + 1,
      d: utc ? d.getUTCDate() : d.getDate(),
      h: utc ? d.getUTCHours() : d.getHours(),
      mi: utc ? d.getUTCMinutes() : d.getMinutes(),
      s: utc ? d.getUTCSeconds() : d.getSeconds(),
      ms: utc ? d.getUTCMilliseconds() : d.getMilliseconds(),
      offset: utc ? 0 : -d.getTimezoneOffset(),
    };
  }
  /** @param {number} offset minutes east of UTC */
  function zoneOf(offset) {
    if (state.zone === 'utc') return 'UTC';
    var sign = offset < 0 ? '-' : '+';
    var a = Math.abs(offset);
    return 'UTC' + sign + pad(Math.floor(a / 60)) + ':' + pad(a % 60);
  }
  function zoneName() {
    return zoneOf(-new Date().getTimezoneOffset());
  }
  /** @param {NonNullable<ReturnType<typeof parts>>} p */
  function fmtDate(p) {
    return p.y + '-' + pad(p.mo) + '-' + pad(p.d);
  }
  /**
   * @param {number} ms
   * @param {boolean} [withMs]
   */
  function fmtClock(ms, withMs) {
    var p = parts(ms);
    if (!p) return String(ms);
    return pad(p.h) + ':' + pad(p.mi) + ':' + pad(p.s) + (withMs ? '.' + pad(p.ms, 3) : '');
  }
  // Every time on the page says its zone.
  /** @param {number} ms */
  function fmtTime(ms) {
    var p = parts(ms);
    if (!p) return String(ms);
    return fmtDate(p) + ' ' + fmtClock(ms, true) + ' ' + zoneOf(p.offset);
  }
  /** @param {number} ms */
  function fmtShort(ms) {
    var p = parts(ms);
    if (!p) return String(ms);
    return fmtDate(p) + ' ' + pad(p.h) + ':' + pad(p.mi) + ' ' + zoneOf(p.offset);
  }
  /** @param {number} ms */
  function isoInput(ms) {
    var p = parts(ms);
    return p ? fmtDate(p) + 'T' + pad(p.h) + ':' + pad(p.mi) + ':' + pad(p.s) : '';
  }
  // An ISO date-time from an input, independent of the browser's locale: with Z or an offset as
  // written, else in the zone shown (UTC or the browser's).
  /**
   * @param {string} text
   * @returns {number} epoch milliseconds, NaN when the text is no date-time
   */
  function parseInput(text) {
    var m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i.exec(text.trim());
    if (!m) return NaN;
    var n = /** @param {number} i */ function (i) {
      var found = /** @type {RegExpExecArray} */ (m);
      return found[i] ? Number(found[i]) : 0;
    };
    var ms = m[7] ? Number((m[7] + '00').slice(0, 3)) : 0;
    if (m[8]) {
      var base = Date.UTC(n(1), n(2) - 1, n(3), n(4), n(5), n(6), ms);
      if (m[8].toUpperCase() === 'Z') return base;
      var z = m[8].replace(':', '');
      var off = (Number(z.slice(1, 3)) * 60 + Number(z.slice(3, 5))) * (z[0] === '-' ? -1 : 1);
      return base - off * 60000;
    }
    if (state.zone === 'utc') return Date.UTC(n(1), n(2) - 1, n(3), n(4), n(5), n(6), ms);
    return new Date(n(1), n(2) - 1, n(3), n(4), n(5), n(6), ms).getTime();
  }
  /** @param {number | null | undefined} ms */
  function fmtDuration(ms) {
    if (ms === null || ms === undefined || !isFinite(ms)) return '—';
    return ms < 1000 ? Math.round(ms * 10) / 10 + ' ms' : (ms / 1000).toFixed(2) + ' s';
  }
  /** @param {number} ms */
  function isoTime(ms) {
    var d = new Date(ms);
    return isFinite(d.getTime()) ? d.toISOString() : '';
  }
  /** @param {ApiRef | undefined} api */
  function apiName(api) {
    return api ? api.provider + '/' + api.name + '/v' + api.version : '';
  }

  /** @param {Outcome | undefined} outcome */
  function badge(outcome) {
    var code = outcome && outcome.code ? outcome.code : 'GENERIC_ERROR';
    var safe = ORDER.indexOf(code) >= 0 ? code : 'GENERIC_ERROR';
    var text = LABELS[safe] && ORDER.indexOf(code) >= 0 ? label(code) : (outcome && outcome.label) || code;
    return el('span', { class: 'badge o-' + safe, text: text });
  }

  // ---- window and filters in the URL ------------------------------------------------------------

  // The window: a preset (the last 15 min, 1 h, 24 h, 7 d up to now, moving with each refresh)
  // or a custom range (fixed). Resolved to from/to once per load, the same for list and chart.
  function resolveWindow() {
    if (state.win.preset === 'custom') {
      var from = state.win.from !== undefined ? state.win.from : 0;
      var to = state.win.to !== undefined ? state.win.to : Date.now();
      return { from: from, to: to };
    }
    var now = Date.now();
    return { from: now - (WINDOWS[state.win.preset] || WINDOWS[DEFAULT_WINDOW]), to: now };
  }

  function fromLocation() {
    var params = new URLSearchParams(window.location.search);
    /** @type {Record<string, string>} */
    var filter = {};
    TEXT_FILTERS.concat(['outcome', 'outcomeGroup', 'messageId']).forEach(function (name) {
      var v = params.get(name);
      if (v) filter[name] = v;
    });
    var preset = params.get('window');
    /** @type {Win} */
    var win = { preset: (preset !== null && WINDOWS[preset]) || preset === 'custom' ? /** @type {string} */ (preset) : DEFAULT_WINDOW };
    if (win.preset === 'custom') {
      var f = Number(params.get('from')),
        to = Number(params.get('to'));
      if (params.get('from') && isFinite(f)) win.from = f;
      if (params.get('to') && isFinite(to)) win.to = to;
    }
    state.filter = filter;
    state.win = win;
  }

  function search() {
    var params = new URLSearchParams();
    params.set('window', state.win.preset);
    if (state.win.preset === 'custom') {
      if (state.win.from !== undefined) params.set('from', String(state.win.from));
      if (state.win.to !== undefined) params.set('to', String(state.win.to));
    }
    Object.keys(state.filter).forEach(function (k) {
      params.set(k, state.filter[k]);
    });
    return params;
  }

  function saveLocation() {
    window.history.replaceState(null, '', '?' + search().toString() + window.location.hash);
  }

  /** @param {Element} container */
  function checkedValues(container) {
    /** @type {string[]} */
    var out = [];
    container.querySelectorAll('input[type=checkbox]').forEach(function (box) {
      var input = /** @type {HTMLInputElement} */ (box);
      if (input.checked) out.push(input.value);
    });
    return out;
  }

  function buildOutcomeChoices() {
    var groups = $('f-groups');
    var outcomes = $('f-outcomes');
    var checkedGroups = (state.filter.outcomeGroup || '').split(',');
    var checkedOutcomes = (state.filter.outcome || '').split(',');
    groups.replaceChildren();
    Object.keys(GROUPS).forEach(function (g) {
      var id = 'g-' + g;
      groups.appendChild(
        el('label', { class: 'check', for: id, title: GROUPS[g].map(label).join(', ') }, [
          el('input', { type: 'checkbox', id: id, value: g, checked: checkedGroups.indexOf(g) >= 0 ? 'checked' : false }),
          ' ' + t('g_' + g),
        ]),
      );
    });
    outcomes.replaceChildren();
    ORDER.forEach(function (code) {
      var id = 'o-' + code;
      outcomes.appendChild(
        el('label', { class: 'check', for: id }, [
          el('input', { type: 'checkbox', id: id, value: code, checked: checkedOutcomes.indexOf(code) >= 0 ? 'checked' : false }),
          el('span', { class: 'swatch o-' + code, 'aria-hidden': 'true' }),
          ' ' + label(code),
        ]),
      );
    });
  }

  function writeForm() {
    var form = $('filters');
    TEXT_FILTERS.forEach(function (name) {
      form.elements[name].value = state.filter[name] || '';
    });
    form.elements.window.value = state.win.preset;
    var range = resolveWindow();
    form.elements.from.value = isoInput(state.win.preset === 'custom' && state.win.from === undefined ? NaN : range.from);
    form.elements.to.value = isoInput(range.to);
    buildOutcomeChoices();
    if (state.filter.outcome) $('outcome-details').open = true;
    if (
      TEXT_FILTERS.some(function (name) {
        return state.filter[name];
      })
    )
      $('more-filters').open = true;
    syncWindowInputs();
  }

  function syncWindowInputs() {
    var custom = $('f-window').value === 'custom';
    $('f-from').readOnly = !custom;
    $('f-to').readOnly = !custom;
    document.querySelectorAll('.zone-name').forEach(function (n) {
      n.textContent = '(' + zoneName() + ')';
    });
  }

  function readForm() {
    var form = $('filters');
    /** @type {Record<string, string>} */
    var filter = {};
    TEXT_FILTERS.forEach(function (name) {
      var v = form.elements[name].value.trim();
      if (v !== '') filter[name] = v;
    });
    var groups = checkedValues($('f-groups'));
    var outcomes = checkedValues($('f-outcomes'));
    if (groups.length) filter.outcomeGroup = groups.join(',');
    if (outcomes.length) filter.outcome = outcomes.join(',');
    /** @type {Win} */
    var win = { preset: form.elements.window.value };
    if (win.preset === 'custom') {
      var from = form.elements.from.value.trim(),
        to = form.elements.to.value.trim();
      var f = from ? parseInput(from) : undefined,
        tt = to ? parseInput(to) : undefined;
      if ((from && isNaN(/** @type {number} */ (f))) || (to && isNaN(/** @type {number} */ (tt)))) {
        setMessage(t('badTime'));
        return null;
      }
      if (f !== undefined) win.from = f;
      if (tt !== undefined) win.to = tt;
    }
    return { filter: filter, win: win };
  }

  // ---- data ------------------------------------------------------------------------------------

  /** @param {string} [text] */
  function setMessage(text) {
    $('message').textContent = text || '';
  }

  // Every API call carries the console's own header: the server refuses JSON and state-changing
  // requests without it, which a form or a plain link from another page cannot send.
  var API_HEADERS = { accept: 'application/json', '__CONSOLE_HEADER__': '1' };

  /**
   * @param {Response} res
   * @param {any} body
   */
  function problemText(res, body) {
    return t('apiError', { status: res.status }) + (body && body.detail ? ': ' + body.detail : '');
  }

  /**
   * @param {string} url
   * @returns {Promise<CallResult>}
   */
  function getJson(url) {
    return fetch(url, { headers: API_HEADERS, credentials: 'same-origin' }).then(function (res) {
      return res
        .json()
        .catch(function () {
          return null;
        })
        .then(function (body) {
          return { res: res, body: body };
        });
    });
  }

  /** @param {{ from: number, to: number }} range */
  function queryParams(range) {
    var params = new URLSearchParams();
    Object.keys(state.filter).forEach(function (k) {
      params.set(k, state.filter[k]);
    });
    params.set('from', String(Math.floor(range.from)));
    params.set('to', String(Math.floor(range.to)));
    return params;
  }

  // One load: the list's first page (or the next) and, with the first page, the statistics, both
  // over the same resolved window.
  /** @param {boolean} older the next page, rather than the first */
  function load(older) {
    var seq = ++state.seq;
    // With data-loaded, what scripts driving the page wait on: a load that began after their action has ended.
    document.body.setAttribute('data-load-started', String(seq));
    var range = older && state.range ? state.range : resolveWindow();
    state.range = range;
    var params = queryParams(range);
    params.set('limit', String(PAGE_SIZE));
    if (older && state.next) params.set('cursor', state.next);
    var list = getJson('api/transactions?' + params.toString()).then(
      function (r) {
        if (seq !== state.seq) return;
        if (!r.res.ok || !r.body || !Array.isArray(r.body.items)) {
          setMessage(problemText(r.res, r.body));
          return;
        }
        setMessage('');
        state.items = older ? state.items.concat(r.body.items) : r.body.items;
        state.next = r.body.next || null;
        renderTable();
        renderApis();
      },
      function () {
        if (seq === state.seq) setMessage(t('unreachable'));
      },
    );
    var stats = older ? Promise.resolve() : loadStats(range, seq);
    return Promise.all([list, stats]).then(function () {
      if (seq === state.seq) {
        $('updated').textContent =
          t('updated') +
          ' ' +
          fmtClock(Date.now()) +
          ' ' +
          zoneOf(/** @type {NonNullable<ReturnType<typeof parts>>} */ (parts(Date.now())).offset);
        document.body.setAttribute('data-loaded', String(seq));
      }
    });
  }

  /**
   * @param {{ from: number, to: number }} range
   * @param {number} seq the load it is part of
   */
  function loadStats(range, seq) {
    return getJson('api/stats?' + queryParams(range).toString()).then(
      function (r) {
        if (seq !== state.seq) return;
        if (r.res.status === 501) {
          state.stats = null;
          renderChart(t('noStats'));
          renderReport();
          return;
        }
        if (!r.res.ok || !r.body || !Array.isArray(r.body.buckets)) {
          setMessage(problemText(r.res, r.body));
          return;
        }
        state.stats = r.body;
        renderChart();
        renderReport();
      },
      function () {
        if (seq === state.seq) setMessage(t('unreachable'));
      },
    );
  }

  // ---- table -----------------------------------------------------------------------------------

  /** @param {Transaction} r */
  function rowOf(r) {
    var who = el('div', { class: 'who' }, [
      el('span', { text: (r.sender && r.sender.subject) || '—' }),
      r.sender && r.sender.clientId ? el('span', { class: 'client', text: r.sender.clientId }) : null,
    ]);
    return el('tr', { tabindex: '0', 'data-id': r.id, 'aria-haspopup': 'dialog' }, [
      el('td', { class: 'time', 'data-label': t('colTime') }, [
        el('time', { datetime: isoTime(r.startedAt) || undefined, text: fmtTime(r.startedAt) }),
      ]),
      el('td', { class: 'api', 'data-label': t('api'), text: apiName(r.api) || '—' }),
      el('td', { class: 'operation', 'data-label': t('operation'), text: r.operation || '—' }),
      el('td', { class: 'request', 'data-label': t('colRequest'), title: r.method + ' ' + r.url }, [
        el('span', { class: 'method', text: r.method }),
        r.url,
      ]),
      el('td', { class: 'num status', 'data-label': t('colStatus'), text: r.status === null ? '—' : r.status }),
      el('td', { class: 'outcome', 'data-label': t('colOutcome') }, [badge(r.outcome)]),
      el('td', { class: 'subject', 'data-label': t('colWho') }, [who]),
      el('td', { class: 'num duration', 'data-label': t('colDuration'), text: fmtDuration(r.durationMs) }),
      el('td', { class: 'node', 'data-label': t('nodeId'), text: r.nodeId || '—' }),
    ]);
  }

  function renderTable() {
    var focused = document.activeElement;
    var focusedId = focused && focused.closest && focused.closest('#rows tr') ? focused.getAttribute('data-id') : null;
    var rows = $('rows');
    var fragment = document.createDocumentFragment();
    state.items.forEach(function (r) {
      fragment.appendChild(rowOf(r));
    });
    rows.replaceChildren(fragment);
    $('empty').hidden = state.items.length > 0;
    $('more').hidden = !state.next;
    $('count').textContent = '(' + state.items.length + (state.next ? '+' : '') + ')';
    if (focusedId) {
      var again = findRow(focusedId);
      if (again) again.focus({ preventScroll: true });
    }
  }

  /**
   * @param {string} id
   * @returns {HTMLElement | null}
   */
  function findRow(id) {
    var rows = $('rows').children;
    for (var i = 0; i < rows.length; i++) if (rows[i].getAttribute('data-id') === id) return /** @type {HTMLElement} */ (rows[i]);
    return null;
  }

  function renderApis() {
    /** @type {Record<string, boolean>} */
    var seen = {};
    var list = $('api-list');
    list.replaceChildren();
    var names =
      state.stats && state.stats.top
        ? state.stats.top.api.map(
            /** @param {TopEntry} e */ function (e) {
              return e.value;
            },
          )
        : [];
    state.items.forEach(function (r) {
      names.push(apiName(r.api));
    });
    names.forEach(
      /** @param {string} name */ function (name) {
        if (name && !seen[name]) {
          seen[name] = true;
          list.appendChild(el('option', { value: name }));
        }
      },
    );
  }

  // ---- chart (from the store's statistics over the window) --------------------------------------

  /** @param {string} [note] what to say instead of a chart */
  function renderChart(note) {
    var box = $('chart');
    var legend = $('legend');
    legend.replaceChildren();
    var stats = state.stats;
    var W = 1200,
      H = 150,
      left = 44,
      right = 10,
      top = 8,
      bottom = 24;
    if (!stats) {
      $('totals').textContent = '';
      box.replaceChildren(
        svg('svg', { viewBox: '0 0 ' + W + ' 60', role: 'img', 'aria-label': note || '' }, [
          svg('text', { x: W / 2, y: 34, 'text-anchor': 'middle', class: 'none', text: note || '' }),
        ]),
      );
      return;
    }
    var totals = stats.totals.byOutcome || {};
    ORDER.forEach(function (code) {
      if (!totals[code]) return;
      legend.appendChild(
        el('li', { 'data-outcome': code }, [
          el('span', { class: 'swatch o-' + code, 'aria-hidden': 'true' }),
          label(code) + ': ' + totals[code],
        ]),
      );
    });
    $('totals').textContent = t('totals', {
      n: stats.totals.count,
      mean: fmtDuration(stats.totals.meanDurationMs),
      p95: fmtDuration(stats.totals.p95DurationMs),
    });
    var buckets = stats.buckets;
    var summary =
      t('chartSummary', { n: stats.totals.count, from: fmtShort(stats.from), to: fmtShort(stats.to) }) +
      (stats.totals.count
        ? ': ' +
          ORDER.filter(function (c) {
            return totals[c];
          })
            .map(function (c) {
              return totals[c] + ' ' + label(c);
            })
            .join(', ')
        : '');
    if (stats.totals.count === 0) {
      box.replaceChildren(
        svg('svg', { viewBox: '0 0 ' + W + ' 60', role: 'img', 'aria-label': summary }, [
          svg('text', { x: W / 2, y: 34, 'text-anchor': 'middle', class: 'none', text: t('noTransactions') }),
        ]),
      );
      return;
    }
    var n = buckets.length;
    var peak = 1;
    buckets.forEach(
      /** @param {Bucket} b */ function (b) {
        var sum = 0;
        Object.keys(b.counts).forEach(function (c) {
          sum += b.counts[c];
        });
        if (sum > peak) peak = sum;
      },
    );
    var plotW = W - left - right,
      plotH = H - top - bottom;
    var slot = plotW / n;
    var barW = Math.max(Math.min(slot * 0.72, 40), 1);
    var children = [svg('title', { text: t('chartHeading') }), svg('desc', { text: summary })];
    var ticks = peak <= 4 ? peak : 4;
    for (var i = 0; i <= ticks; i++) {
      var value = Math.round((peak * i) / ticks);
      var y = top + plotH - (plotH * value) / peak;
      children.push(svg('line', { class: i === 0 ? 'axis' : 'grid', x1: left, x2: W - right, y1: y, y2: y }));
      children.push(svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', text: value }));
    }
    var labelEvery = Math.ceil(n / 8);
    var long = stats.to - stats.from > 86400000;
    buckets.forEach(
      /** @param {Bucket} bucket @param {number} index */ function (bucket, index) {
        var x = left + slot * index + (slot - barW) / 2;
        var base = top + plotH;
        ORDER.forEach(function (code) {
          var count = bucket.counts[code];
          if (!count) return;
          var h = (plotH * count) / peak;
          base -= h;
          children.push(
            svg('rect', { class: 'o-' + code, x: x.toFixed(1), y: base.toFixed(1), width: barW.toFixed(1), height: h.toFixed(1) }, [
              svg('title', { text: fmtShort(bucket.start) + ' — ' + label(code) + ': ' + count }),
            ]),
          );
        });
        if (index % labelEvery === 0) {
          var p = parts(bucket.start);
          children.push(
            svg('text', {
              x: (left + slot * index + slot / 2).toFixed(1),
              y: H - 8,
              'text-anchor': 'middle',
              text: long && p ? pad(p.mo) + '-' + pad(p.d) + ' ' + pad(p.h) + ':' + pad(p.mi) : fmtClock(bucket.start),
            }),
          );
        }
      },
    );
    box.replaceChildren(
      svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': summary, preserveAspectRatio: 'xMidYMid meet' }, children),
    );
  }

  // ---- report ----------------------------------------------------------------------------------

  /**
   * @param {string} id
   * @param {string} title
   * @param {TopEntry[]} entries
   * @param {(value: string) => Node} [render]
   */
  function topTable(id, title, entries, render) {
    var body =
      entries.length === 0
        ? el('p', { class: 'note', text: t('none') })
        : el('table', { class: 'top-values' }, [
            el('caption', { class: 'visually-hidden', text: title }),
            el('thead', {}, [
              el('tr', {}, [el('th', { scope: 'col', text: t('value') }), el('th', { scope: 'col', class: 'num', text: t('records') })]),
            ]),
            el(
              'tbody',
              {},
              entries.map(
                /** @param {TopEntry} e */ function (e) {
                  return el('tr', {}, [
                    el('th', { scope: 'row' }, [render ? render(e.value) : e.value]),
                    el('td', { class: 'num', text: e.count }),
                  ]);
                },
              ),
            ),
          ]);
    return el('section', { class: 'report-part', 'aria-labelledby': id }, [el('h3', { id: id, text: title }), body]);
  }

  function renderReport() {
    var box = $('report');
    var stats = state.stats;
    if (!stats) {
      box.replaceChildren(el('p', { class: 'note', text: t('noStats') }));
      return;
    }
    var top = stats.top || { api: [], operation: [], clientId: [], status: [], gatewayStatus: [] };
    var counts = stats.totals.byOutcome;
    var byOutcome = ORDER.filter(function (c) {
      return counts[c];
    })
      .map(function (c) {
        return { value: c, count: counts[c] };
      })
      .sort(function (a, b) {
        return b.count - a.count;
      });
    box.replaceChildren(
      el('dl', { class: 'figures' }, [
        el('div', {}, [el('dt', { text: t('count') }), el('dd', { id: 'r-count', text: stats.totals.count })]),
        el('div', {}, [el('dt', { text: t('mean') }), el('dd', { id: 'r-mean', text: fmtDuration(stats.totals.meanDurationMs) })]),
        el('div', {}, [el('dt', { text: t('p95') }), el('dd', { id: 'r-p95', text: fmtDuration(stats.totals.p95DurationMs) })]),
        el('div', {}, [el('dt', { text: t('window') }), el('dd', { text: fmtShort(stats.from) + ' – ' + fmtShort(stats.to) })]),
      ]),
      el('div', { class: 'report-grid' }, [
        topTable(
          'r-outcomes',
          t('byOutcome'),
          byOutcome,
          /** @param {string} code */ function (code) {
            return badge({ code: code });
          },
        ),
        topTable('r-apis', t('topApis'), top.api),
        topTable('r-operations', t('topOperations'), top.operation),
        topTable('r-clients', t('topClients'), top.clientId),
        topTable('r-status', t('byStatus'), top.status),
        topTable('r-gateway-status', t('byGatewayStatus'), top.gatewayStatus),
      ]),
    );
  }

  // ---- detail ----------------------------------------------------------------------------------

  /** @param {Array<[string, unknown]>} pairs a label and its value (a node or a value shown as text) */
  function kv(pairs) {
    var dl = el('dl', { class: 'kv' });
    pairs.forEach(function (p) {
      var v = p[1];
      if (v === undefined || v === null || v === '') return;
      dl.appendChild(el('dt', { text: p[0] }));
      dl.appendChild(el('dd', {}, [typeof v === 'object' ? /** @type {Node} */ (v) : String(v)]));
    });
    return dl;
  }

  /**
   * @param {string} id
   * @param {string} title
   * @param {Node[]} content
   */
  function section(id, title, content) {
    return el('section', { 'aria-labelledby': id }, /** @type {Node[]} */ ([el('h3', { id: id, text: title })]).concat(content));
  }

  // Any value a record may hold must render: a time claim out of Date's range (exp: 1e20) has no
  // date, a value JSON cannot write is shown as text.
  /**
   * @param {string} name
   * @param {unknown} value
   */
  function claimValue(name, value) {
    if (typeof value === 'number' && TIME_CLAIMS.indexOf(name) >= 0) {
      var when = isoTime(value * 1000);
      return when ? value + '  (' + fmtTime(value * 1000) + ')' : String(value);
    }
    if (typeof value === 'string') return value;
    try {
      var text = JSON.stringify(value);
      return text === undefined ? String(value) : text;
    } catch (e) {
      return String(value);
    }
  }

  /**
   * @param {string} caption
   * @param {[string, string]} head
   * @param {Array<[string, string]>} rows
   */
  function pairTable(caption, head, rows) {
    return el('table', { class: 'pairs' }, [
      el('caption', { class: 'visually-hidden', text: caption }),
      el('thead', {}, [el('tr', {}, [el('th', { scope: 'col', text: head[0] }), el('th', { scope: 'col', text: head[1] })])]),
      el(
        'tbody',
        {},
        rows.map(function (r) {
          return el('tr', {}, [el('th', { scope: 'row', text: r[0] }), el('td', { text: r[1] })]);
        }),
      ),
    ]);
  }

  /**
   * @param {string} caption
   * @param {unknown} claims
   */
  function claimsTable(caption, claims) {
    if (!claims || typeof claims !== 'object') return el('p', { class: 'mono', text: claimValue('', claims) });
    return pairTable(
      caption,
      [t('claimCol'), t('value')],
      Object.keys(claims).map(function (k) {
        return /** @type {[string, string]} */ ([k, claimValue(k, /** @type {Record<string, unknown>} */ (claims)[k])]);
      }),
    );
  }

  /**
   * @param {string} caption
   * @param {Record<string, unknown>} headers
   */
  function headersTable(caption, headers) {
    return pairTable(
      caption,
      [t('header'), t('value')],
      Object.keys(headers).map(function (k) {
        return /** @type {[string, string]} */ ([k, String(headers[k])]);
      }),
    );
  }

  /** @param {XacmlExplanation} explanation */
  function decidedByText(explanation) {
    var by = explanation.decidedBy;
    if (by && typeof by.rule === 'string') return t('ruleOfPolicy', { rule: by.rule, policy: by.policy === undefined ? '' : by.policy });
    if (by && Array.isArray(by.path))
      return by.path
        .map(function (p) {
          return p.kind + ' "' + p.id + '"';
        })
        .join(' › ');
    return t('noRuleApplied');
  }

  /** @param {unknown} values */
  function valuesText(values) {
    if (!Array.isArray(values)) return claimValue('', values);
    return values.length === 1 ? String(values[0]) : JSON.stringify(values);
  }

  // Why a request was not permitted: each element evaluated and what failed, then the request's attributes.
  /** @param {Authorization} authz */
  function xacmlParts(authz) {
    /** @type {HTMLElement[]} */
    var parts = [];
    var explanation = authz.explanation;
    if (explanation && Array.isArray(explanation.steps) && explanation.steps.length > 0) {
      parts.push(
        el('h4', { text: t('whyNot') }),
        el('div', { class: 'table-wrap' }, [
          el('table', { id: 'd-steps' }, [
            el('caption', { class: 'visually-hidden', text: t('whyNot') }),
            el('thead', {}, [
              el(
                'tr',
                {},
                [t('elementCol'), t('resultCol'), t('failedCol')].map(function (h) {
                  return el('th', { scope: 'col', text: h });
                }),
              ),
            ]),
            el(
              'tbody',
              {},
              explanation.steps.map(function (step) {
                var failure = step.failure;
                var failed = failure
                  ? (failure.part === 'target' ? t('failedTarget') : t('failedCondition')) +
                    ': ' +
                    (failure.failed || []).join('; ') +
                    (failure.message ? ' (' + failure.message + ')' : '')
                  : '';
                var depth = Array.isArray(step.parents) ? step.parents.length : 0;
                return el('tr', {}, [
                  el('th', {
                    scope: 'row',
                    text: '\u00a0\u00a0'.repeat(depth) + step.kind + ' ' + step.id + (step.effect ? ' (' + step.effect + ')' : ''),
                  }),
                  el('td', { text: step.decision }),
                  el('td', { text: failed }),
                ]);
              }),
            ),
          ]),
        ]),
      );
      if (explanation.omittedSteps) parts.push(el('p', { class: 'note', text: t('omittedSteps', { n: explanation.omittedSteps }) }));
    }
    var request = authz.request;
    if (request && typeof request === 'object') {
      var categories = request;
      /** @type {Array<[string, string, string]>} */
      var rows = [];
      ['subject', 'resource', 'action', 'environment'].forEach(function (category) {
        (Array.isArray(categories[category]) ? categories[category] : []).forEach(function (a) {
          rows.push([category, a.id, valuesText(a.values)]);
        });
      });
      parts.push(
        el('h4', { text: t('xacmlRequest') }),
        el('div', { class: 'table-wrap' }, [
          el('table', { id: 'd-attributes' }, [
            el('caption', { class: 'visually-hidden', text: t('xacmlRequest') }),
            el('thead', {}, [
              el(
                'tr',
                {},
                [t('categoryCol'), t('attributeCol'), t('valuesCol')].map(function (h) {
                  return el('th', { scope: 'col', text: h });
                }),
              ),
            ]),
            el(
              'tbody',
              {},
              rows.map(function (row) {
                return el('tr', {}, [el('td', { text: row[0] }), el('th', { scope: 'row', text: row[1] }), el('td', { text: row[2] })]);
              }),
            ),
          ]),
        ]),
      );
      if (request.incomplete) parts.push(el('p', { class: 'note', text: t('requestIncomplete') }));
    }
    return parts;
  }

  /**
   * @param {string} key
   * @param {RecordedBody} body
   */
  function bodyParts(key, body) {
    var meta = [t('bodySize', { size: body.size })];
    if (body.contentType) meta.unshift(body.contentType);
    if (body.truncated) meta.push(t('bodyCut', { kept: body.kept }));
    if (body.encoding === 'base64') meta.push(t('bodyBase64'));
    return [
      el('h4', { text: t(key) }),
      el('p', { class: 'note', text: meta.join(' · ') }),
      el('pre', { class: 'mono', id: 'd-' + key, text: String(body.content) }),
    ];
  }

  // What traffic control decided: the policy that refused and its group, warnings, and each policy
  // that covered the request with where it stood.
  /** @param {Traffic | undefined} traffic */
  function trafficDetail(traffic) {
    if (!traffic || typeof traffic !== 'object') return null;
    var policies = Array.isArray(traffic.policies) ? traffic.policies : [];
    var warnings = Array.isArray(traffic.warnings) ? traffic.warnings : [];
    return section('d-traffic', t('traffic'), [
      kv([
        [
          t('trafficResult'),
          el('span', { id: 'd-traffic-result', class: traffic.result === 'allowed' ? 'mono' : 'decision', text: String(traffic.result) }),
        ],
        [
          t('trafficLimitedBy'),
          traffic.policy === undefined ? undefined : el('span', { id: 'd-traffic-policy', class: 'mono', text: String(traffic.policy) }),
        ],
        [t('trafficGroup'), traffic.group === undefined ? undefined : el('span', { class: 'mono', text: String(traffic.group) })],
        [
          t('trafficWarnings'),
          warnings.length === 0 ? undefined : el('span', { id: 'd-traffic-warnings', class: 'mono', text: warnings.join(', ') }),
        ],
        [t('trafficStoreUnavailable'), traffic.storeUnavailable],
      ]),
      // Six columns scroll on a phone: the region is focusable, so that a keyboard can scroll it.
      el('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': t('trafficPolicies') }, [
        el('table', { id: 'd-traffic-policies' }, [
          el('caption', { class: 'visually-hidden', text: t('trafficPolicies') }),
          el('thead', {}, [
            el(
              'tr',
              {},
              [t('trafficPolicy'), t('trafficMode'), t('trafficGroup'), t('trafficLimit'), t('trafficRemaining'), t('trafficExceeded')].map(
                function (h) {
                  return el('th', { scope: 'col', text: h });
                },
              ),
            ),
          ]),
          el(
            'tbody',
            {},
            policies.map(
              /** @param {TrafficStanding} p */ function (p) {
                var limit = String(p.limit) + (p.windowSeconds === undefined ? ' ' + t('inFlight') : ' / ' + p.windowSeconds + ' s');
                return el('tr', { class: p.exceeded ? 'level-warn' : '' }, [
                  el('td', { class: 'mono', text: String(p.policy) }),
                  el('td', { text: String(p.mode) }),
                  el('td', { class: 'mono', text: String(p.group) }),
                  el('td', { text: limit }),
                  el('td', { text: String(p.remaining) }),
                  el('td', { class: 'level', text: p.exceeded ? t('yes') : t('no') }),
                ]);
              },
            ),
          ),
        ]),
      ]),
    ]);
  }

  /** @param {Transaction} r */
  function renderDetail(r) {
    $('detail-heading').textContent = t('transaction') + ' ' + r.id;
    var left = [];
    var right = [];
    var link = window.location.pathname + window.location.search + '#/transactions/' + encodeURIComponent(r.id);
    left.push(
      section('d-outcome', t('outcome'), [
        kv([
          [t('outcome'), badge(r.outcome)],
          [t('httpStatus'), r.status === null ? t('noResponse') : r.status],
          ['gateway_status', r.gatewayStatus],
          [t('errorCode'), r.errorCode],
          [
            t('problemDetail'),
            typeof r.problemDetail === 'string' ? el('span', { id: 'd-problem-detail', text: r.problemDetail }) : undefined,
          ],
          [t('started'), fmtTime(r.startedAt)],
          [t('duration'), fmtDuration(r.durationMs)],
          [t('api'), apiName(r.api)],
          [t('operation'), r.operation],
          [t('request'), el('span', { class: 'mono', text: r.method + ' ' + r.url })],
          [t('clientAddress'), r.clientAddress],
          [t('nodeId'), r.nodeId],
          [t('transactionId'), el('span', { class: 'mono', text: r.id })],
          [t('messageId'), el('span', { class: 'mono', text: r.messageId })],
          [
            t('traceId'),
            typeof r.traceId === 'string' && r.traceId ? el('span', { class: 'mono', id: 'd-trace', text: r.traceId }) : undefined,
          ],
          [t('link'), el('a', { href: link, class: 'mono', text: '#/transactions/' + r.id })],
        ]),
      ]),
    );
    if (r.authorization) {
      var explanation = r.authorization.explanation;
      left.push(
        section('d-authz', t('authorization'), [
          kv([
            [t('decision'), r.authorization.decision],
            [
              t('decisionText'),
              el('span', { class: r.authorization.decision === 'Permit' ? 'mono' : 'decision', text: r.authorization.text }),
            ],
            [
              t('decidedBy'),
              explanation && typeof explanation === 'object'
                ? el('span', { id: 'd-decided-by', class: 'mono', text: decidedByText(explanation) })
                : undefined,
            ],
          ]),
        ]),
      );
    }
    var traffic = trafficDetail(r.traffic);
    if (traffic) left.push(traffic);
    var s = r.sender || {};
    var hasSender = s.subject || s.clientId || s.username || s.issuer;
    right.push(
      section('d-sender', t('sender'), [
        hasSender
          ? kv([
              [t('subject'), s.subject],
              [t('clientId'), s.clientId],
              [t('username'), s.username],
              [t('issuer'), s.issuer],
            ])
          : el('p', { class: 'note', text: t('noSender') }),
      ]),
    );
    var info = r.tokenInfo;
    var tokenParts = [];
    if (info) {
      tokenParts.push(
        kv([
          [t('tokenSentIn'), info.method],
          [t('tokenPolicy'), info.policy],
        ]),
      );
      var binding = r.binding;
      if (binding)
        tokenParts.push(
          kv([
            [t('binding'), binding.kind + ': ' + binding.result + (binding.reason ? ' (' + binding.reason + ')' : '')],
            [t('bindingThumbprint'), binding.thumbprint],
            [t('bindingPresented'), binding.presented],
          ]),
        );
      if (info.introspection)
        tokenParts.push(el('h4', { text: t('introspectionClaims') }), claimsTable(t('introspectionClaims'), info.introspection));
      if (info.jwt) tokenParts.push(el('h4', { text: t('jwtClaims') }), claimsTable(t('jwtClaims'), info.jwt));
      if (info.userInfo) tokenParts.push(el('h4', { text: t('userInfoClaims') }), claimsTable(t('userInfoClaims'), info.userInfo));
      if (!info.introspection && !info.jwt && !info.userInfo) tokenParts.push(el('p', { class: 'note', text: t('noClaims') }));
    } else {
      tokenParts.push(el('p', { class: 'note', text: t('noToken') }));
    }
    right.push(section('d-token', t('tokenInfo'), tokenParts));
    var parts = [el('div', { class: 'cols' }, [el('div', {}, left), el('div', {}, right)])];
    var diags = r.diagnostics || [];
    parts.push(
      section('d-diag', t('diagnostics'), [
        diags.length === 0
          ? el('p', { class: 'note', text: t('noDiagnostics') })
          : el('div', { class: 'table-wrap' }, [
              el('table', {}, [
                el('caption', { class: 'visually-hidden', text: t('diagnostics') }),
                el('thead', {}, [
                  el(
                    'tr',
                    {},
                    [t('colTime'), t('level'), t('code'), t('messageCol')].map(function (h) {
                      return el('th', { scope: 'col', text: h });
                    }),
                  ),
                ]),
                el(
                  'tbody',
                  {},
                  diags.map(function (d) {
                    return el('tr', { class: 'level-' + d.level }, [
                      el('td', { text: fmtClock(d.time, true) }),
                      el('td', { class: 'level', text: d.level }),
                      el('td', { text: d.code }),
                      el('td', { text: d.message }),
                    ]);
                  }),
                ),
              ]),
            ]),
      ]),
    );
    var authz = r.authorization;
    if (authz && ((authz.explanation && Array.isArray(authz.explanation.steps)) || authz.request))
      parts.push(section('d-xacml', t('xacmlRequest'), xacmlParts(authz)));
    if (r.incoming && r.incoming.headers) {
      parts.push(
        section('d-incoming', t('incoming'), [
          el('h4', { text: t('incomingHeaders') }),
          headersTable(t('incomingHeaders'), r.incoming.headers),
        ]),
      );
    }
    var out = r.outgoing;
    var outgoing = [
      out && out.headers
        ? Object.keys(out.headers).length === 0
          ? el('p', { class: 'note', text: t('outgoingEmpty') })
          : [el('h4', { text: t('outgoingHeaders') }), headersTable(t('outgoingHeaders'), out.headers)]
        : el('p', { class: 'note', text: t('outgoingNone') }),
    ].flat();
    if (r.requestBody) outgoing.push.apply(outgoing, bodyParts('requestBody', r.requestBody));
    parts.push(section('d-outgoing', t('outgoing'), outgoing));
    if (r.responseBody) parts.push(section('d-response', t('response'), bodyParts('responseBody', r.responseBody)));
    $('detail-body').replaceChildren.apply($('detail-body'), parts);
  }

  /** @param {Transaction} body */
  function showDetail(body) {
    try {
      renderDetail(body);
    } catch (/** @type {any} */ e) {
      // Whatever a record holds, the dialog opens: with what could be shown and why not the rest.
      $('detail-heading').textContent = t('transaction') + ' ' + String(body.id);
      $('detail-body').replaceChildren(
        el('p', { class: 'note', text: t('partial') + (e && e.message ? e.message : String(e)) }),
        el('pre', { class: 'mono', text: claimValue('', body) }),
      );
    }
    var dialog = $('detail');
    if (!dialog.open) dialog.showModal();
    $('detail-body').scrollTop = 0;
    $('close').focus();
  }

  // Opens a transaction's detail at its own address (#/transactions/<id>).
  /** @param {string} id */
  function openDetail(id) {
    state.returnFocusId = id;
    var hash = '#/transactions/' + encodeURIComponent(id);
    if (window.location.hash !== hash) {
      if (!/^#\/transactions\//.test(window.location.hash)) state.returnHash = window.location.hash || '#/';
      window.history.pushState(null, '', hash);
    }
    return fetchDetail(id);
  }

  /** @param {string} id */
  function fetchDetail(id) {
    return getJson('api/transactions/' + encodeURIComponent(id)).then(
      function (r) {
        if (!r.res.ok || !r.body) {
          setMessage(r.res.status === 404 ? t('notFound') : problemText(r.res, r.body));
          return false;
        }
        showDetail(r.body);
        return true;
      },
      function () {
        setMessage(t('unreachable'));
        return false;
      },
    );
  }

  // The search box: a transaction id opens its detail; else a message id, whatever the window.
  /** @param {string} text */
  function find(text) {
    var id = text.trim();
    if (!id) return;
    getJson('api/find/' + encodeURIComponent(id)).then(
      function (r) {
        if (!r.res.ok || !r.body) {
          setMessage(problemText(r.res, r.body));
          return;
        }
        if (r.body.transaction) {
          openDetail(r.body.transaction.id);
          return;
        }
        var found = Array.isArray(r.body.messageIds) ? r.body.messageIds : [];
        if (found.length === 1) {
          openDetail(found[0]);
          return;
        }
        if (found.length === 0) {
          setMessage(t('notFound'));
          return;
        }
        state.filter = { messageId: id };
        state.win = { preset: '7d' };
        writeForm();
        saveLocation();
        load(false).then(function () {
          setMessage(t('severalFound'));
        });
      },
      function () {
        setMessage(t('unreachable'));
      },
    );
  }

  // ---- views and routes ------------------------------------------------------------------------

  function route() {
    var hash = window.location.hash;
    var m = /^#\/transactions\/(.+)$/.exec(hash);
    if (m) {
      var id = decodeURIComponent(m[1]);
      state.returnFocusId = id;
      fetchDetail(id);
      return;
    }
    var dialog = $('detail');
    if (dialog.open) dialog.close();
    setView(hash === '#/report' ? 'report' : 'list');
  }

  /** @param {string} view */
  function setView(view) {
    state.view = view;
    $('view-list').hidden = view !== 'list';
    $('view-report').hidden = view !== 'report';
    if (view === 'list') {
      $('tab-list').setAttribute('aria-current', 'page');
      $('tab-report').removeAttribute('aria-current');
    } else {
      $('tab-report').setAttribute('aria-current', 'page');
      $('tab-list').removeAttribute('aria-current');
    }
  }

  // ---- export ----------------------------------------------------------------------------------

  function buildExportColumns() {
    var box = $('x-columns');
    EXPORT_COLUMNS.forEach(function (name) {
      var id = 'x-col-' + name;
      box.appendChild(
        el('label', { class: 'check', for: id }, [
          el('input', { type: 'checkbox', id: id, value: name, checked: DEFAULT_COLUMNS.indexOf(name) >= 0 ? 'checked' : false }),
          ' ' + name,
        ]),
      );
    });
  }

  // The export of the current filter and window, fetched with the console's header, saved as a file.
  /** @param {SubmitEvent} event */
  function download(event) {
    event.preventDefault();
    var form = $('export-form');
    var params = queryParams(resolveWindow());
    params.set('format', form.elements.format.value);
    var limit = form.elements.limit.value.trim();
    if (limit) params.set('limit', limit);
    var columns = checkedValues($('x-columns'));
    if (columns.length) params.set('columns', columns.join(','));
    fetch('api/export?' + params.toString(), { headers: { '__CONSOLE_HEADER__': '1' }, credentials: 'same-origin' }).then(
      function (res) {
        if (!res.ok)
          return res
            .json()
            .catch(function () {
              return null;
            })
            .then(function (body) {
              setMessage(problemText(res, body));
            });
        var name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') || '');
        return res.blob().then(function (blob) {
          var url = URL.createObjectURL(blob);
          var a = el('a', { href: url, download: name ? name[1] : 'transactions' });
          document.body.appendChild(a);
          a.click();
          a.remove();
          setTimeout(function () {
            URL.revokeObjectURL(url);
          }, 60000);
          setMessage(t('exported', { n: blob.size }));
        });
      },
      function () {
        setMessage(t('unreachable'));
      },
    );
  }

  // ---- wiring ----------------------------------------------------------------------------------

  function schedule() {
    if (state.timer) {
      clearInterval(state.timer);
      state.timer = null;
    }
    if ($('auto-refresh').checked) {
      state.timer = setInterval(function () {
        // Keep older pages the user loaded and the window chosen: refresh only on the first page.
        if (!document.hidden && !(state.items.length > PAGE_SIZE) && !$('detail').open) load(false);
      }, REFRESH_MS);
    }
  }

  function rerender() {
    applyLanguage();
    syncWindowInputs();
    var range = resolveWindow();
    if (state.win.preset !== 'custom') {
      $('f-from').value = isoInput(range.from);
      $('f-to').value = isoInput(range.to);
    }
    renderTable();
    renderChart(state.stats ? undefined : t('noStats'));
    renderReport();
  }

  function init() {
    state.lang = openingLanguage(recall('lang'));
    state.zone = recall('zone') === 'utc' ? 'utc' : 'local';
    $('zone').value = state.zone;
    fromLocation();
    applyLanguage();
    writeForm();
    buildExportColumns();

    $('filters').addEventListener('submit', function (event) {
      event.preventDefault();
      var read = readForm();
      if (!read) return;
      state.filter = read.filter;
      state.win = read.win;
      saveLocation();
      load(false).then(function () {
        writeForm();
      });
    });
    $('filters').addEventListener('reset', function () {
      setTimeout(function () {
        state.filter = {};
        state.win = { preset: DEFAULT_WINDOW };
        writeForm();
        saveLocation();
        load(false);
      }, 0);
    });
    $('f-window').addEventListener('change', function () {
      syncWindowInputs();
      if ($('f-window').value !== 'custom') {
        var span = WINDOWS[$('f-window').value];
        var now = Date.now();
        $('f-from').value = isoInput(now - span);
        $('f-to').value = isoInput(now);
      }
    });
    $('search').addEventListener('submit', function (event) {
      event.preventDefault();
      find($('q').value);
    });
    $('lang').addEventListener('change', function () {
      state.lang = $('lang').value === 'en' ? 'en' : 'it';
      remember('lang', state.lang);
      rerender();
    });
    $('zone').addEventListener('change', function () {
      // Custom range inputs keep their instant: rewritten in the new zone.
      state.zone = $('zone').value === 'utc' ? 'utc' : 'local';
      remember('zone', state.zone);
      writeForm();
      rerender();
    });
    $('refresh').addEventListener('click', function () {
      load(false);
    });
    $('more').addEventListener('click', function () {
      load(true);
    });
    $('auto-refresh').addEventListener('change', schedule);
    $('export-form').addEventListener('submit', download);

    var rows = $('rows');
    rows.addEventListener('click', function (event) {
      var tr = /** @type {Element} */ (event.target).closest('tr');
      if (tr && tr.getAttribute('data-id')) openDetail(/** @type {string} */ (tr.getAttribute('data-id')));
    });
    rows.addEventListener('keydown', function (event) {
      var tr = /** @type {Element} */ (event.target).closest('tr');
      if (!tr || event.target !== tr) return;
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        openDetail(/** @type {string} */ (tr.getAttribute('data-id')));
      } else if (event.key === 'ArrowDown' && tr.nextElementSibling) {
        event.preventDefault();
        /** @type {HTMLElement} */ (tr.nextElementSibling).focus();
      } else if (event.key === 'ArrowUp' && tr.previousElementSibling) {
        event.preventDefault();
        /** @type {HTMLElement} */ (tr.previousElementSibling).focus();
      }
    });

    var dialog = $('detail');
    $('close').addEventListener('click', function () {
      dialog.close();
    });
    dialog.addEventListener('click', function (event) {
      if (event.target === dialog) dialog.close();
    });
    dialog.addEventListener('close', function () {
      if (/^#\/transactions\//.test(window.location.hash)) window.history.pushState(null, '', state.returnHash || '#/');
      setView(window.location.hash === '#/report' ? 'report' : 'list');
      var row = state.returnFocusId ? findRow(state.returnFocusId) : null;
      if (row && state.view === 'list') row.focus();
      else $(state.view === 'list' ? 'results-heading' : 'report-heading').focus();
    });
    window.addEventListener('popstate', route);
    window.addEventListener('hashchange', route);

    route();
    load(false);
    schedule();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();

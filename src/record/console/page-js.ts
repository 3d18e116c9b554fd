/**
 * The console page's script (served at `<mount>/console.js`). Plain browser JavaScript, no build
 * step; kept here as a string so the package ships it inside `dist/`. It builds the DOM with
 * `textContent`/`setAttribute` only, so no recorded value is ever parsed as HTML.
 *
 * @module
 */
import { outcomeLabels } from '../../errors.js';
import { CONSOLE_REQUEST_HEADER } from './guard.js';

// String.raw keeps the script's backslashes as written; the script uses no backtick or "${".
const source = String.raw`
// Monitoring console page script. Every value goes into the page with textContent or
// setAttribute: no HTML is ever built from data.
(function () {
  'use strict';
  var LABELS = __OUTCOME_LABELS__;
  var ORDER = Object.keys(LABELS);
  var PAGE_SIZE = 100;
  var REFRESH_MS = 5000;
  var SVG = 'http://www.w3.org/2000/svg';
  var TIME_CLAIMS = ['exp', 'iat', 'nbf', 'auth_time', 'updated_at'];

  var state = { items: [], next: null, filter: {}, timer: null, seq: 0, returnFocusId: null };

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function svg(tag, attrs, children) {
    var node = document.createElementNS(SVG, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === undefined || v === null || v === false) return;
      if (k === 'text') node.textContent = String(v);
      else node.setAttribute(k, String(v));
    });
  }
  function append(node, children) {
    if (!children) return;
    children.forEach(function (c) {
      if (c === undefined || c === null || c === false) return;
      node.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    });
  }

  function pad(n, w) { return String(n).padStart(w || 2, '0'); }
  function fmtDate(ms) {
    var d = new Date(ms);
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate());
  }
  function fmtClock(ms, withMs) {
    var d = new Date(ms);
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds()) + (withMs ? '.' + pad(d.getMilliseconds(), 3) : '');
  }
  function fmtTime(ms) { return fmtDate(ms) + ' ' + fmtClock(ms, true); }
  function fmtDuration(ms) { return ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(2) + ' s'; }
  function apiName(api) { return api ? api.provider + '/' + api.name + '/v' + api.version : ''; }
  function label(code) { return LABELS[code] ? LABELS[code].it : code; }
  function labelEn(code) { return LABELS[code] ? LABELS[code].en : code; }

  function badge(outcome) {
    var code = outcome && outcome.code ? outcome.code : 'GENERIC_ERROR';
    var safe = ORDER.indexOf(code) >= 0 ? code : 'GENERIC_ERROR';
    return el('span', { class: 'badge o-' + safe, title: outcome.en || labelEn(code), text: outcome.label || label(code) });
  }

  // ---- filters -------------------------------------------------------------------------------

  var FILTERS = ['outcome', 'api', 'subject', 'clientId', 'status', 'from', 'to'];

  function toLocalInput(ms) {
    var d = new Date(ms);
    return fmtDate(ms) + 'T' + pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  function readForm() {
    var form = $('filters');
    var filter = {};
    FILTERS.forEach(function (name) {
      var v = form.elements[name].value.trim();
      if (v === '') return;
      if (name === 'from' || name === 'to') {
        var ms = new Date(v).getTime();
        if (!isNaN(ms)) filter[name] = String(name === 'to' ? ms + 999 : ms);
      } else {
        filter[name] = v;
      }
    });
    return filter;
  }

  function writeForm(filter) {
    var form = $('filters');
    FILTERS.forEach(function (name) {
      var v = filter[name];
      if (v === undefined) { form.elements[name].value = ''; return; }
      form.elements[name].value = (name === 'from' || name === 'to') ? toLocalInput(Number(v)) : v;
    });
  }

  function filterFromLocation() {
    var params = new URLSearchParams(window.location.search);
    var filter = {};
    FILTERS.forEach(function (name) { var v = params.get(name); if (v) filter[name] = v; });
    return filter;
  }

  function saveLocation(filter) {
    var params = new URLSearchParams();
    Object.keys(filter).forEach(function (k) { params.set(k, filter[k]); });
    var search = params.toString();
    window.history.replaceState(null, '', search ? '?' + search : window.location.pathname);
  }

  // ---- data ----------------------------------------------------------------------------------

  function setMessage(text) { $('message').textContent = text || ''; }

  // Every API call carries the console's own header: the server refuses JSON and state-changing
  // requests without it, which a form or a plain link from another page cannot send.
  var API_HEADERS = { accept: 'application/json', '__CONSOLE_HEADER__': '1' };

  function problemText(res, body) {
    return 'The console API answered ' + res.status + (body && body.detail ? ': ' + body.detail : '');
  }

  function load(older) {
    var seq = ++state.seq;
    var params = new URLSearchParams();
    Object.keys(state.filter).forEach(function (k) { params.set(k, state.filter[k]); });
    params.set('limit', String(PAGE_SIZE));
    if (older && state.next) params.set('cursor', state.next);
    return fetch('api/transactions?' + params.toString(), { headers: API_HEADERS, credentials: 'same-origin' })
      .then(function (res) {
        return res.json().catch(function () { return null; }).then(function (body) {
          if (seq !== state.seq) return;
          if (!res.ok || !body || !Array.isArray(body.items)) { setMessage(problemText(res, body)); return; }
          setMessage('');
          state.items = older ? state.items.concat(body.items) : body.items;
          state.next = body.next || null;
          render();
          $('updated').textContent = 'Updated ' + fmtClock(Date.now());
        });
      }, function () {
        if (seq === state.seq) setMessage('The console API cannot be reached.');
      });
  }

  function render() {
    renderTable();
    renderChart();
    renderApis();
  }

  // ---- table ---------------------------------------------------------------------------------

  function rowOf(r) {
    var who = el('div', { class: 'who' }, [
      el('span', { text: (r.sender && r.sender.subject) || '—' }),
      r.sender && r.sender.clientId ? el('span', { class: 'client', text: r.sender.clientId }) : null,
    ]);
    var tr = el('tr', { tabindex: '0', 'data-id': r.id, 'aria-haspopup': 'dialog' }, [
      el('td', { class: 'time' }, [el('time', { datetime: isoTime(r.startedAt) || undefined, text: fmtTime(r.startedAt) })]),
      el('td', { text: apiName(r.api) || '—' }),
      el('td', { text: r.operation || '—' }),
      el('td', { class: 'request', title: r.method + ' ' + r.url }, [el('span', { class: 'method', text: r.method }), r.url]),
      el('td', { class: 'num', text: r.status === null ? '—' : r.status }),
      el('td', {}, [badge(r.outcome)]),
      el('td', {}, [who]),
      el('td', { class: 'num', text: fmtDuration(r.durationMs) }),
    ]);
    return tr;
  }

  function renderTable() {
    var focused = document.activeElement;
    var focusedId = focused && focused.closest && focused.closest('#rows tr') ? focused.getAttribute('data-id') : null;
    var rows = $('rows');
    var fragment = document.createDocumentFragment();
    state.items.forEach(function (r) { fragment.appendChild(rowOf(r)); });
    rows.replaceChildren(fragment);
    $('empty').hidden = state.items.length > 0;
    $('more').hidden = !state.next;
    $('count').textContent = '(' + state.items.length + (state.next ? '+' : '') + ')';
    if (focusedId) {
      var again = findRow(focusedId);
      if (again) again.focus({ preventScroll: true });
    }
  }

  function findRow(id) {
    var rows = $('rows').children;
    for (var i = 0; i < rows.length; i++) if (rows[i].getAttribute('data-id') === id) return rows[i];
    return null;
  }

  function renderApis() {
    var seen = {};
    var list = $('api-list');
    list.replaceChildren();
    state.items.forEach(function (r) {
      var name = apiName(r.api);
      if (name && !seen[name]) { seen[name] = true; list.appendChild(el('option', { value: name })); }
    });
  }

  // ---- chart ---------------------------------------------------------------------------------

  var STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400].map(function (s) { return s * 1000; });

  function renderChart() {
    var box = $('chart');
    var legend = $('legend');
    var items = state.items;
    var totals = {};
    items.forEach(function (r) { totals[r.outcome.code] = (totals[r.outcome.code] || 0) + 1; });
    legend.replaceChildren();
    ORDER.forEach(function (code) {
      if (!totals[code]) return;
      legend.appendChild(el('li', {}, [el('span', { class: 'swatch o-' + code, 'aria-hidden': 'true' }), label(code) + ': ' + totals[code]]));
    });
    var W = 1200, H = 150, left = 40, right = 10, top = 8, bottom = 24;
    if (items.length === 0) {
      box.replaceChildren(svg('svg', { viewBox: '0 0 ' + W + ' 60', role: 'img', 'aria-label': 'No transactions to chart' }, [
        svg('text', { x: W / 2, y: 34, 'text-anchor': 'middle', class: 'none', text: 'No transactions yet' }),
      ]));
      return;
    }
    var min = Infinity, max = -Infinity;
    items.forEach(function (r) { if (r.startedAt < min) min = r.startedAt; if (r.startedAt > max) max = r.startedAt; });
    var step = STEPS[STEPS.length - 1];
    for (var i = 0; i < STEPS.length; i++) { if ((max - min) / STEPS[i] <= 40) { step = STEPS[i]; break; } }
    var first = Math.floor(min / step);
    var n = Math.max(Math.floor(max / step) - first + 1, 12);
    first = Math.floor(max / step) - n + 1;
    var buckets = [];
    for (var b = 0; b < n; b++) buckets.push({ total: 0 });
    items.forEach(function (r) {
      var bucket = buckets[Math.floor(r.startedAt / step) - first];
      if (!bucket) return;
      bucket[r.outcome.code] = (bucket[r.outcome.code] || 0) + 1;
      bucket.total++;
    });
    var peak = Math.max.apply(null, buckets.map(function (x) { return x.total; }));
    var scaleMax = Math.max(peak, 1);
    var plotW = W - left - right, plotH = H - top - bottom;
    var slot = plotW / n;
    var barW = Math.max(Math.min(slot * 0.72, 40), 2);
    var summary = items.length + ' transactions between ' + fmtTime(min) + ' and ' + fmtTime(max) + ': ' +
      ORDER.filter(function (c) { return totals[c]; }).map(function (c) { return totals[c] + ' ' + label(c); }).join(', ');
    var children = [svg('title', { text: 'Outcomes over time' }), svg('desc', { text: summary })];
    var ticks = scaleMax <= 4 ? scaleMax : 4;
    for (var t = 0; t <= ticks; t++) {
      var value = Math.round(scaleMax * t / ticks);
      var y = top + plotH - plotH * value / scaleMax;
      children.push(svg('line', { class: t === 0 ? 'axis' : 'grid', x1: left, x2: W - right, y1: y, y2: y }));
      children.push(svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', text: value }));
    }
    var labelEvery = Math.ceil(n / 8);
    buckets.forEach(function (bucket, index) {
      var x = left + slot * index + (slot - barW) / 2;
      var base = top + plotH;
      var start = (first + index) * step;
      ORDER.forEach(function (code) {
        var count = bucket[code];
        if (!count) return;
        var h = plotH * count / scaleMax;
        base -= h;
        children.push(svg('rect', { class: 'o-' + code, x: x.toFixed(1), y: base.toFixed(1), width: barW.toFixed(1), height: h.toFixed(1) }, [
          svg('title', { text: fmtClock(start) + ' — ' + label(code) + ': ' + count }),
        ]));
      });
      if (index % labelEvery === 0) {
        children.push(svg('text', { x: (left + slot * index + slot / 2).toFixed(1), y: H - 8, 'text-anchor': 'middle', text: fmtClock(start) }));
      }
    });
    box.replaceChildren(svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': summary, preserveAspectRatio: 'xMidYMid meet' }, children));
  }

  // ---- detail --------------------------------------------------------------------------------

  function kv(pairs) {
    var dl = el('dl', { class: 'kv' });
    pairs.forEach(function (p) {
      var v = p[1];
      if (v === undefined || v === null || v === '') return;
      dl.appendChild(el('dt', { text: p[0] }));
      dl.appendChild(el('dd', {}, [typeof v === 'object' ? v : String(v)]));
    });
    return dl;
  }

  function section(id, title, content) {
    return el('section', { 'aria-labelledby': id }, [el('h3', { id: id, text: title })].concat(content));
  }

  // Any value a record may hold must render: a time claim out of Date's range (exp: 1e20) has no
  // date, a value JSON cannot write is shown as text.
  function isoTime(ms) {
    var d = new Date(ms);
    return isFinite(d.getTime()) ? d.toISOString() : '';
  }
  function claimValue(name, value) {
    if (typeof value === 'number' && TIME_CLAIMS.indexOf(name) >= 0) {
      var when = isoTime(value * 1000);
      return when ? value + '  (' + when + ')' : String(value);
    }
    if (typeof value === 'string') return value;
    try {
      var text = JSON.stringify(value);
      return text === undefined ? String(value) : text;
    } catch (e) {
      return String(value);
    }
  }

  function pairTable(caption, head, rows) {
    return el('table', { class: 'pairs' }, [
      el('caption', { class: 'visually-hidden', text: caption }),
      el('thead', {}, [el('tr', {}, [el('th', { scope: 'col', text: head[0] }), el('th', { scope: 'col', text: head[1] })])]),
      el('tbody', {}, rows.map(function (r) { return el('tr', {}, [el('th', { scope: 'row', text: r[0] }), el('td', { text: r[1] })]); })),
    ]);
  }

  function claimsTable(caption, claims) {
    if (!claims || typeof claims !== 'object') return el('p', { class: 'mono', text: claimValue('', claims) });
    return pairTable(caption, ['Claim', 'Value'], Object.keys(claims).map(function (k) { return [k, claimValue(k, claims[k])]; }));
  }

  function renderDetail(r) {
    $('detail-heading').textContent = 'Transaction ' + r.id;
    var left = [];
    var right = [];
    left.push(section('d-outcome', 'Outcome', [kv([
      ['Outcome', badge(r.outcome)],
      ['HTTP status', r.status === null ? 'no response sent' : r.status],
      ['gateway_status', r.gatewayStatus],
      ['Error code', r.errorCode],
      ['Started', fmtTime(r.startedAt)],
      ['Duration', fmtDuration(r.durationMs)],
      ['API', apiName(r.api)],
      ['Operation', r.operation],
      ['Request', el('span', { class: 'mono', text: r.method + ' ' + r.url })],
      ['Client address', r.clientAddress],
      ['Transaction id', el('span', { class: 'mono', text: r.id })],
      ['Message id', el('span', { class: 'mono', text: r.messageId })],
    ])]));
    if (r.authorization) {
      left.push(section('d-authz', 'Authorization', [kv([
        ['Decision', r.authorization.decision],
        ['Decision text', el('span', { class: r.authorization.decision === 'Permit' ? 'mono' : 'decision', text: r.authorization.text })],
      ])]));
    }
    var s = r.sender || {};
    var hasSender = s.subject || s.clientId || s.username || s.issuer;
    right.push(section('d-sender', 'Sender', [hasSender
      ? kv([['Subject', s.subject], ['Client id', s.clientId], ['Username', s.username], ['Issuer', s.issuer]])
      : el('p', { class: 'note', text: 'No token data: the sender was not identified.' })]));
    var info = r.tokenInfo;
    var tokenParts = [];
    if (info) {
      tokenParts.push(kv([['Token sent in', info.method], ['Token policy', info.policy]]));
      if (info.introspection) tokenParts.push(el('h4', { text: 'Introspection claims' }), claimsTable('Introspection claims', info.introspection));
      if (info.jwt) tokenParts.push(el('h4', { text: 'JWT claims' }), claimsTable('JWT claims', info.jwt));
      if (info.userInfo) tokenParts.push(el('h4', { text: 'UserInfo claims' }), claimsTable('UserInfo claims', info.userInfo));
      if (!info.introspection && !info.jwt && !info.userInfo) tokenParts.push(el('p', { class: 'note', text: 'No claims: the token was not accepted by the authorization server.' }));
    } else {
      tokenParts.push(el('p', { class: 'note', text: 'No token in this transaction.' }));
    }
    right.push(section('d-token', 'Token info', tokenParts));
    var parts = [el('div', { class: 'cols' }, [el('div', {}, left), el('div', {}, right)])];
    var diags = r.diagnostics || [];
    parts.push(section('d-diag', 'Diagnostics', [diags.length === 0
      ? el('p', { class: 'note', text: 'No diagnostics.' })
      : el('table', {}, [
        el('caption', { class: 'visually-hidden', text: 'Diagnostics' }),
        el('thead', {}, [el('tr', {}, ['Time', 'Level', 'Code', 'Message'].map(function (h) { return el('th', { scope: 'col', text: h }); }))]),
        el('tbody', {}, diags.map(function (d) {
          return el('tr', { class: 'level-' + d.level }, [
            el('td', { text: fmtClock(d.time, true) }), el('td', { class: 'level', text: d.level }),
            el('td', { text: d.code }), el('td', { text: d.message }),
          ]);
        })),
      ])]));
    var out = r.outgoing;
    parts.push(section('d-outgoing', 'Outgoing contents', [out
      ? (Object.keys(out.headers).length === 0
        ? el('p', { class: 'note', text: 'Recorded, but no headers were sent to the backend.' })
        : [el('h4', { text: 'Headers sent to the backend' }), pairTable('Headers sent to the backend', ['Header', 'Value'], Object.keys(out.headers).map(function (k) { return [k, out.headers[k]]; }))])
      : el('p', { class: 'note', text: 'None recorded: nothing was sent to the backend, or the message recording of this API does not include outgoing headers.' })].flat()));
    $('detail-body').replaceChildren.apply($('detail-body'), parts);
  }

  function openDetail(id) {
    state.returnFocusId = id;
    return fetch('api/transactions/' + encodeURIComponent(id), { headers: API_HEADERS, credentials: 'same-origin' })
      .then(function (res) {
        return res.json().catch(function () { return null; }).then(function (body) {
          if (!res.ok || !body) { setMessage(problemText(res, body)); return; }
          try {
            renderDetail(body);
          } catch (e) {
            // Whatever a record holds, the dialog opens: with what could be shown and why not the rest.
            $('detail-heading').textContent = 'Transaction ' + String(body.id);
            $('detail-body').replaceChildren(
              el('p', { class: 'note', text: 'This record could not be shown in full: ' + (e && e.message ? e.message : String(e)) }),
              el('pre', { class: 'mono', text: claimValue('', body) }));
          }
          var dialog = $('detail');
          if (!dialog.open) dialog.showModal();
          $('detail-body').scrollTop = 0;
          $('close').focus();
        });
      }, function () { setMessage('The console API cannot be reached.'); });
  }

  // ---- wiring --------------------------------------------------------------------------------

  function schedule() {
    if (state.timer) { clearInterval(state.timer); state.timer = null; }
    if ($('auto-refresh').checked) {
      state.timer = setInterval(function () {
        // Keep older pages the user loaded: refresh only when on the first page.
        if (!document.hidden && !(state.items.length > PAGE_SIZE)) load(false);
      }, REFRESH_MS);
    }
  }

  function init() {
    var select = $('f-outcome');
    ORDER.forEach(function (code) {
      select.appendChild(el('option', { value: code, text: LABELS[code].it + (LABELS[code].en !== LABELS[code].it ? ' (' + LABELS[code].en + ')' : '') }));
    });
    state.filter = filterFromLocation();
    writeForm(state.filter);

    $('filters').addEventListener('submit', function (event) {
      event.preventDefault();
      state.filter = readForm();
      saveLocation(state.filter);
      load(false);
    });
    $('filters').addEventListener('reset', function () {
      setTimeout(function () { state.filter = {}; saveLocation(state.filter); load(false); }, 0);
    });
    $('refresh').addEventListener('click', function () { load(false); });
    $('more').addEventListener('click', function () { load(true); });
    $('auto-refresh').addEventListener('change', schedule);

    var rows = $('rows');
    rows.addEventListener('click', function (event) {
      var tr = event.target.closest('tr');
      if (tr && tr.getAttribute('data-id')) openDetail(tr.getAttribute('data-id'));
    });
    rows.addEventListener('keydown', function (event) {
      var tr = event.target.closest('tr');
      if (!tr || event.target !== tr) return;
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        openDetail(tr.getAttribute('data-id'));
      } else if (event.key === 'ArrowDown' && tr.nextElementSibling) {
        event.preventDefault();
        tr.nextElementSibling.focus();
      } else if (event.key === 'ArrowUp' && tr.previousElementSibling) {
        event.preventDefault();
        tr.previousElementSibling.focus();
      }
    });

    var dialog = $('detail');
    $('close').addEventListener('click', function () { dialog.close(); });
    dialog.addEventListener('click', function (event) { if (event.target === dialog) dialog.close(); });
    dialog.addEventListener('close', function () {
      var row = state.returnFocusId ? findRow(state.returnFocusId) : null;
      if (row) row.focus(); else $('transactions-heading').focus();
    });

    load(false);
    schedule();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
`;

/** The console page's JavaScript, with the outcome labels of the catalogue built in. */
export const CONSOLE_JS: string = source
  .replace('__OUTCOME_LABELS__', () => JSON.stringify(outcomeLabels))
  .replace('__CONSOLE_HEADER__', CONSOLE_REQUEST_HEADER);

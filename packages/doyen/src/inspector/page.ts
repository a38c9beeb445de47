/**
 * The local inspector page: self-contained (inline CSS and JS, no network resources but this
 * node's own endpoints). It fetches `/inspector/machines`, draws each machine's states as
 * nested boxes with its transitions (listed in each box and drawn as arrows), and follows
 * `/inspector/live` to highlight the current states.
 */
export function renderInspectorPage(boot: { node: string; uid: string }): string {
  // JSON inside <script>: escape `<` so no value can close the element.
  const data = JSON.stringify(boot).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>doyen inspector · ${escapeHtml(boot.node)}</title>
<style>${CSS}</style>
</head>
<body>
<header>
  <h1>doyen inspector</h1>
  <div class="meta">
    <span>node <code id="node" data-node="${escapeHtml(boot.node)}">${escapeHtml(boot.node)}</code></span>
    <span>uid <code id="uid">${escapeHtml(boot.uid)}</code></span>
    <span>incarnation <code id="incarnation">?</code></span>
    <span id="conn" data-state="connecting">connecting</span>
    <span>last update <time id="updated" data-at="">never</time></span>
  </div>
</header>
<main id="machines" aria-live="polite"><p class="empty">loading machines…</p></main>
<footer>States from the machine definitions; the current states are <span class="legend-active">highlighted</span>.
Arrows and <em>event → target</em> rows are transitions; grey rows are handled in place (no state change).</footer>
<script id="boot" type="application/json">${data}</script>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

const CSS = `
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d0d7de; --bg: #f6f8fa;
  --active: #1a7f37; --active-bg: #dafbe1; --arrow: #8c959f; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--fg); background: #fff; }
header { position: sticky; top: 0; z-index: 5; background: #fff; border-bottom: 1px solid var(--line); padding: 10px 20px; display: flex; flex-wrap: wrap; align-items: baseline; gap: 8px 24px; }
h1 { font-size: 18px; margin: 0; }
.meta { display: flex; flex-wrap: wrap; gap: 6px 18px; color: var(--muted); }
code { font: 12.5px/1.3 ui-monospace, "DejaVu Sans Mono", monospace; color: var(--fg); }
#conn::before { content: "● "; }
#conn[data-state="live"] { color: var(--active); }
#conn[data-state="offline"] { color: #cf222e; }
#conn[data-state="connecting"] { color: #9a6700; }
main { padding: 12px 20px 4px; display: grid; gap: 16px; }
.empty { color: var(--muted); }
section.machine { border: 1px solid var(--line); border-radius: 8px; background: var(--bg); padding: 10px 12px 12px; }
section.machine > h2 { font-size: 15px; margin: 0 0 8px; display: flex; flex-wrap: wrap; gap: 4px 14px; align-items: baseline; font-weight: 600; }
.machine-id { color: var(--muted); font-weight: 400; }
.value { color: var(--active); }
.value::before { content: "state: "; color: var(--muted); font-weight: 400; }
.status[data-status="active"] { display: none; }
.status { color: #cf222e; }
.updated { color: var(--muted); font-weight: 400; font-size: 12.5px; margin-left: auto; }
.chart { position: relative; overflow-x: auto; padding-bottom: 36px; }
.chart > svg.edges { position: absolute; left: 0; top: 0; pointer-events: none; overflow: visible; z-index: 2; }
.state { position: relative; border: 1.5px solid #afb8c1; border-radius: 7px; background: #fff; padding: 4px 8px 6px; min-width: 112px; transition: background .25s, box-shadow .25s, border-color .25s; }
.state.root { border: none; background: transparent; padding: 0; }
.state.root > .state-head { display: none; }
.state[data-type="final"] { border-style: double; border-width: 4px; }
.state[data-type="parallel"] > .children { outline: 1px dashed #afb8c1; outline-offset: 3px; }
.state:not(.root)[data-active="true"] { border-color: var(--active); background: var(--active-bg); box-shadow: 0 0 0 2px var(--active); }
.state:not(.root)[data-active="true"] > .state-head .key { color: var(--active); }
.state-head { display: flex; align-items: baseline; gap: 6px; white-space: nowrap; }
.key { font-weight: 600; }
.initial-mark { color: var(--accent); font-size: 11px; }
.type { color: var(--muted); font-size: 11px; }
.children { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 18px 34px; margin-top: 6px; }
.state.root > .children { margin-top: 0; }
ul.transitions { list-style: none; margin: 3px 0 0; padding: 0; font: 11.5px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; }
ul.transitions li { white-space: nowrap; }
ul.transitions li .arrow { color: var(--accent); }
ul.transitions li .guard { color: #8250df; }
ul.transitions li[data-kind="after"] .event, ul.transitions li[data-kind="always"] .event { font-style: italic; }
ul.transitions li.internal { color: var(--muted); white-space: normal; max-width: 520px; }
svg.edges path { fill: none; stroke: var(--arrow); stroke-width: 1.2; opacity: .75; }
svg.edges path.hot { stroke: var(--active); stroke-width: 2; opacity: 1; }
svg.edges text { font: 10.5px ui-monospace, "DejaVu Sans Mono", monospace; fill: #57606a; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg.edges text.hot { fill: var(--active); }
details { margin-top: 8px; }
summary { cursor: pointer; color: var(--muted); font-size: 12.5px; }
pre.context { margin: 4px 0 0; max-height: 160px; overflow: auto; white-space: pre-wrap; word-break: break-all; font: 11.5px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; }
footer { color: var(--muted); font-size: 12px; padding: 8px 20px 16px; }
.legend-active { color: var(--active); background: var(--active-bg); border: 1px solid var(--active); border-radius: 4px; padding: 0 4px; }
`;

/* The client, as plain ES2020 without template literals (it lives inside one). */
const SCRIPT = `
(function () {
  'use strict';
  var boot = JSON.parse(document.getElementById('boot').textContent);
  var main = document.getElementById('machines');
  var views = new Map();
  var renderedKey = '';
  var socket = null;
  var retryMs = 500;
  var SVG = 'http://www.w3.org/2000/svg';

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function formatValue(v) {
    if (typeof v === 'string') return v;
    if (!v || typeof v !== 'object') return String(v);
    var parts = Object.keys(v).map(function (k) {
      var sub = v[k];
      var inner = formatValue(sub);
      return sub && typeof sub === 'object' && Object.keys(sub).length > 1 ? k + '.(' + inner + ')' : k + '.' + inner;
    });
    return parts.join(', ');
  }
  function clock(at) {
    var d = new Date(at);
    function p(n, w) { return String(n).padStart(w || 2, '0'); }
    return p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds()) + '.' + p(d.getMilliseconds(), 3);
  }
  function prettyContext(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
  }
  function shortId(machineId, id) {
    return id.indexOf(machineId + '.') === 0 ? id.slice(machineId.length + 1) : id;
  }

  function renderMachine(m) {
    var section = el('section', 'machine');
    section.dataset.path = m.path;
    section.dataset.machineId = m.id;
    section.dataset.updates = '0';
    var h = el('h2');
    h.appendChild(el('code', 'path', m.path));
    h.appendChild(el('span', 'machine-id', 'machine ' + m.id));
    var value = el('span', 'value');
    value.dataset.role = 'value';
    h.appendChild(value);
    var status = el('span', 'status');
    status.dataset.role = 'status';
    h.appendChild(status);
    var updated = el('time', 'updated');
    updated.dataset.role = 'updated';
    h.appendChild(updated);
    section.appendChild(h);

    var chart = el('div', 'chart');
    var byId = new Map();
    var childrenOf = new Map();
    m.definition.nodes.forEach(function (n) {
      byId.set(n.id, n);
      if (n.parent !== null) {
        if (!childrenOf.has(n.parent)) childrenOf.set(n.parent, []);
        childrenOf.get(n.parent).push(n);
      }
    });
    var edgesFrom = new Map();
    m.definition.edges.forEach(function (e) {
      if (!edgesFrom.has(e.source)) edgesFrom.set(e.source, []);
      edgesFrom.get(e.source).push(e);
    });
    function box(n) {
      var b = el('div', 'state' + (n.parent === null ? ' root' : ''));
      b.dataset.stateId = n.id;
      b.dataset.type = n.type;
      b.dataset.active = 'false';
      var head = el('div', 'state-head');
      if (n.initial) head.appendChild(el('span', 'initial-mark', '\\u25CF\\u2192'));
      head.appendChild(el('span', 'key', n.key));
      if (n.type !== 'atomic') head.appendChild(el('span', 'type', n.type));
      b.appendChild(head);
      var list = el('ul', 'transitions');
      var internal = [];
      (edgesFrom.get(n.id) || []).forEach(function (e) {
        var label = e.label + (e.guard ? ' [' + e.guard + ']' : '');
        if (e.internal) { internal.push(label); return; }
        var li = el('li');
        li.dataset.kind = e.kind;
        li.appendChild(el('span', 'event', e.label));
        if (e.guard) li.appendChild(el('span', 'guard', ' [' + e.guard + ']'));
        li.appendChild(el('span', 'arrow', e.target === e.source ? ' \\u21BB ' : ' \\u2192 '));
        li.appendChild(el('span', 'target', e.target === e.source ? '(re-enter)' : shortId(m.id, e.target)));
        list.appendChild(li);
      });
      if (internal.length > 0) {
        var li = el('li', 'internal', 'in place: ' + internal.join(', '));
        li.dataset.kind = 'internal';
        list.appendChild(li);
      }
      if (list.childNodes.length > 0) b.appendChild(list);
      var kids = childrenOf.get(n.id) || [];
      if (kids.length > 0) {
        var c = el('div', 'children');
        kids.forEach(function (k) { c.appendChild(box(k)); });
        b.appendChild(c);
      }
      return b;
    }
    var root = m.definition.nodes.find(function (n) { return n.parent === null; });
    if (root) chart.appendChild(box(root));
    var svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('class', 'edges');
    chart.insertBefore(svg, chart.firstChild);
    section.appendChild(chart);

    var details = el('details');
    details.appendChild(el('summary', '', 'context'));
    var pre = el('pre', 'context');
    pre.dataset.role = 'context';
    details.appendChild(pre);
    section.appendChild(details);
    return { section: section, chart: chart, svg: svg, def: m.definition, id: m.id, active: [] };
  }

  function drawEdges(view) {
    var svg = view.svg;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var origin = view.chart.getBoundingClientRect();
    var sl = view.chart.scrollLeft;
    svg.setAttribute('width', String(view.chart.scrollWidth));
    svg.setAttribute('height', String(view.chart.scrollHeight));
    var defs = document.createElementNS(SVG, 'defs');
    ['plain', 'hot'].forEach(function (kind) {
      var marker = document.createElementNS(SVG, 'marker');
      marker.setAttribute('id', 'arrow-' + kind + '-' + view.id);
      marker.setAttribute('viewBox', '0 0 10 10');
      marker.setAttribute('refX', '9');
      marker.setAttribute('refY', '5');
      marker.setAttribute('markerWidth', '7');
      marker.setAttribute('markerHeight', '7');
      marker.setAttribute('orient', 'auto-start-reverse');
      var tip = document.createElementNS(SVG, 'path');
      tip.setAttribute('d', 'M0,0 L10,5 L0,10 z');
      tip.setAttribute('style', 'fill:' + (kind === 'hot' ? '#1a7f37' : '#8c959f') + ';stroke:none');
      marker.appendChild(tip);
      defs.appendChild(marker);
    });
    svg.appendChild(defs);
    var boxes = new Map();
    var rects = [];
    view.chart.querySelectorAll('.state').forEach(function (b) {
      boxes.set(b.dataset.stateId, b);
      if (!b.classList.contains('root')) rects.push({ el: b, r: b.getBoundingClientRect() });
    });
    var active = new Set(view.active);
    var labelsAt = [];
    // one arrow per pair of states, naming every event that takes it
    var pairs = new Map();
    view.def.edges.forEach(function (e) {
      if (e.internal || e.target === e.source) return;
      var key = e.source + '>' + e.target;
      var p = pairs.get(key);
      if (!p) pairs.set(key, (p = { source: e.source, target: e.target, labels: [], titles: [] }));
      if (p.labels.indexOf(e.label) < 0) p.labels.push(e.label);
      p.titles.push(e.label + (e.guard ? ' [' + e.guard + ']' : ''));
    });
    pairs.forEach(function (e) {
      var label = e.labels.join(' | ');
      if (label.length > 34) label = e.labels[0] + ' +' + (e.labels.length - 1);
      var a = boxes.get(e.source), b = boxes.get(e.target);
      if (!a || !b || a.classList.contains('root') || b.classList.contains('root')) return;
      var ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect();
      if (contains(ra, rb) || contains(rb, ra)) return;
      var x1, y1, x2, y2, c1x, c1y, c2x, c2y;
      var ox = origin.left - sl, oy = origin.top;
      if (rb.left >= ra.right - 4) {
        x1 = ra.right; y1 = ra.top + Math.min(16, ra.height / 2); x2 = rb.left; y2 = rb.top + Math.min(16, rb.height / 2);
        var dx = Math.max(20, (x2 - x1) / 2);
        c1x = x1 + dx; c1y = y1; c2x = x2 - dx; c2y = y2;
      } else if (rb.right <= ra.left + 4) {
        x1 = ra.left + 14; y1 = ra.bottom; x2 = rb.right - 14; y2 = rb.bottom;
        var dy = Math.min(40, 22 + Math.abs(x1 - x2) / 20);
        c1x = x1; c1y = Math.max(y1, y2) + dy; c2x = x2; c2y = Math.max(y1, y2) + dy;
      } else if (rb.top >= ra.bottom) {
        x1 = ra.left + ra.width / 2; y1 = ra.bottom; x2 = rb.left + rb.width / 2; y2 = rb.top;
        c1x = x1; c1y = y1 + 20; c2x = x2; c2y = y2 - 20;
      } else {
        x1 = ra.left + ra.width / 2; y1 = ra.top; x2 = rb.left + rb.width / 2; y2 = rb.bottom;
        c1x = x1; c1y = y1 - 20; c2x = x2; c2y = y2 + 20;
      }
      x1 -= ox; x2 -= ox; c1x -= ox; c2x -= ox; y1 -= oy; y2 -= oy; c1y -= oy; c2y -= oy;
      var hot = active.has(e.source);
      var path = document.createElementNS(SVG, 'path');
      path.setAttribute('d', 'M' + x1 + ',' + y1 + ' C' + c1x + ',' + c1y + ' ' + c2x + ',' + c2y + ' ' + x2 + ',' + y2);
      path.setAttribute('marker-end', 'url(#arrow-' + (hot ? 'hot' : 'plain') + '-' + view.id + ')');
      if (hot) path.setAttribute('class', 'hot');
      path.dataset.source = e.source;
      var title = document.createElementNS(SVG, 'title');
      title.textContent = shortId(view.id, e.source) + ' \\u2192 ' + shortId(view.id, e.target) + ': ' + e.titles.join(', ');
      path.appendChild(title);
      svg.appendChild(path);
      // the event name on the curve, where it covers no other state box nor another label;
      // without such a place the arrow stays unlabelled (its source box lists it anyway)
      var w = label.length * 6.4 + 4;
      var spot = null;
      [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8].some(function (t) {
        var u = 1 - t;
        var px = u * u * u * x1 + 3 * u * u * t * c1x + 3 * u * t * t * c2x + t * t * t * x2;
        var py = u * u * u * y1 + 3 * u * u * t * c1y + 3 * u * t * t * c2y + t * t * t * y2;
        var box = { left: px - w / 2 + ox, right: px + w / 2 + ox, top: py - 13 + oy, bottom: py + oy };
        var free = rects.every(function (x) {
          // boxes around both ends (a compound parent) may carry the label; the ends themselves not
          if (x.el !== a && x.el !== b && x.el.contains(a) && x.el.contains(b)) return true;
          return !overlaps(x.r, box);
        }) && labelsAt.every(function (l) { return !overlaps(l, box); });
        if (free) { spot = [px, py]; labelsAt.push(box); }
        return free;
      });
      if (!spot) return;
      var text = document.createElementNS(SVG, 'text');
      text.setAttribute('x', String(spot[0]));
      text.setAttribute('y', String(spot[1] - 3));
      text.setAttribute('text-anchor', 'middle');
      if (hot) text.setAttribute('class', 'hot');
      text.textContent = label;
      svg.appendChild(text);
    });
  }
  function overlaps(p, q) {
    return p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom;
  }
  function contains(outer, inner) {
    return inner.left >= outer.left && inner.right <= outer.right && inner.top >= outer.top && inner.bottom <= outer.bottom;
  }

  function applyState(view, s, fromLive) {
    var section = view.section;
    view.active = s.active;
    var active = new Set(s.active);
    section.querySelectorAll('.state').forEach(function (b) {
      b.dataset.active = active.has(b.dataset.stateId) ? 'true' : 'false';
    });
    var valueText = formatValue(s.value);
    section.dataset.value = JSON.stringify(s.value);
    section.dataset.status = s.status;
    section.querySelector('[data-role="value"]').textContent = valueText;
    var status = section.querySelector('[data-role="status"]');
    status.dataset.status = s.status;
    status.textContent = s.status;
    section.querySelector('[data-role="context"]').textContent = prettyContext(s.context);
    var at = s.at || Date.now();
    var updated = section.querySelector('[data-role="updated"]');
    updated.textContent = 'updated ' + clock(at);
    updated.dataset.at = String(at);
    if (fromLive) section.dataset.updates = String(Number(section.dataset.updates) + 1);
    var t = document.getElementById('updated');
    t.textContent = clock(at);
    t.dataset.at = String(at);
    drawEdges(view);
  }

  function render(machines) {
    views.clear();
    main.textContent = '';
    if (machines.length === 0) main.appendChild(el('p', 'empty', 'no machines under /system/ on this node'));
    machines.forEach(function (m) {
      var view = renderMachine(m);
      views.set(m.path, view);
      main.appendChild(view.section);
    });
    machines.forEach(function (m) { applyState(views.get(m.path), m, false); });
    renderedKey = machines.map(function (m) { return m.path; }).join(',');
  }

  var loading = null;
  function load() {
    if (loading) return loading;
    loading = fetch('/inspector/machines', { cache: 'no-store' })
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.json(); })
      .then(render)
      .catch(function (e) { main.textContent = ''; main.appendChild(el('p', 'empty', 'cannot load machines: ' + e.message)); })
      .then(function () { loading = null; });
    return loading;
  }

  function setConn(state, text) {
    var c = document.getElementById('conn');
    c.dataset.state = state;
    c.textContent = text;
  }

  function connect() {
    var url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/inspector/live';
    setConn('connecting', 'connecting');
    var ws = new WebSocket(url);
    socket = ws;
    ws.onopen = function () { retryMs = 500; setConn('live', 'live'); };
    ws.onmessage = function (ev) {
      var msg;
      try { msg = JSON.parse(ev.data); } catch (e) { return; }
      if (msg.type === 'hello') {
        var n = document.getElementById('node');
        n.textContent = msg.node;
        n.dataset.node = msg.node;
        document.getElementById('uid').textContent = msg.uid;
        document.getElementById('incarnation').textContent = String(msg.incarnation);
        if (msg.uid !== boot.uid || msg.machines.join(',') !== renderedKey) {
          boot.uid = msg.uid;
          load();
        }
      } else if (msg.type === 'update') {
        var apply = function () { var v = views.get(msg.path); if (v) applyState(v, msg, true); };
        if (loading) loading.then(apply); else apply();
      }
    };
    ws.onclose = function () {
      if (socket !== ws) return;
      setConn('offline', 'offline, retrying');
      setTimeout(connect, retryMs);
      retryMs = Math.min(5000, retryMs * 2);
    };
  }

  var resizeTimer = null;
  window.addEventListener('resize', function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { views.forEach(drawEdges); }, 100);
  });
  load().then(connect);
})();
`;

// The doyen cluster console: one page, no framework, no build. It reads /console/state once,
// follows /console/stream (server-sent events) and replays /console/history (or a loaded export).
const $ = (id) => document.getElementById(id);
const esc = (v) =>
  String(v).replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );
const short = (key) => (key ? String(key).replace(/#.*$/, '') : '');
const time = (ms) => new Date(ms).toISOString().slice(11, 23);
const MAX_FRAMES = 50000;
const MAX_EVENTS = 5000;

const live = { servedBy: '', nodes: new Map(), events: [], seqs: new Set(), skew: 0 };
let frames = []; // { at, kind: 'view' | 'event', view | event }, in `at` order
let historyFrom = Date.now();
let replayAt = null; // null: live; else the index of the last frame shown
let offline = false;
let source = null;
let scheduled = false;
/** What each section last drew: a section whose markup did not change is not parsed and laid out again. */
const drawn = new Map();
function setHtml(id, html) {
  if (drawn.get(id) === html) return;
  drawn.set(id, html);
  $(id).innerHTML = html;
}
/** What each keyed container last drew: its keys in order and each child's markup. */
const keyedDrawn = new WeakMap();
/**
 * Draws `items` ([key, markup], one element each) as the children of `container`. While the keys
 * stay the same only the children whose markup changed are replaced: at 50 nodes one node's new
 * view re-lays one card or row, not fifty (the style and layout of whole sections were most of
 * the page's time per update).
 */
function setKeyed(container, items) {
  const keys = items.map(([k]) => k).join('\n');
  const prev = keyedDrawn.get(container);
  if (!prev || prev.keys !== keys || container.children.length !== items.length) {
    container.innerHTML = items.map(([, html]) => html).join('');
    keyedDrawn.set(container, { keys, html: items.map(([, html]) => html) });
    return;
  }
  for (let i = 0; i < items.length; i++) {
    const html = items[i][1];
    if (prev.html[i] === html) continue;
    prev.html[i] = html;
    const t = document.createElement('template');
    t.innerHTML = html;
    container.children[i].replaceWith(t.content);
  }
}

const eventOrder = (a, b) => a.at - b.at || a.seq - b.seq;

/**
 * Adds events in order. Each goes where it belongs (nearly always last) rather than the list of
 * up to MAX_EVENTS being sorted again: at 50 nodes a kill brings ~50 timeline frames, and a
 * sort of 5,000 events for each was main-thread time the next frame waited on.
 */
function addEvents(events) {
  const list = live.events;
  for (const e of events) {
    const id = `${e.node}|${e.seq}|${e.at}|${e.event}`;
    if (live.seqs.has(id)) continue;
    live.seqs.add(id);
    let lo = list.length;
    if (lo > 0 && eventOrder(list[lo - 1], e) > 0) {
      lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (eventOrder(list[mid], e) <= 0) lo = mid + 1;
        else hi = mid;
      }
    }
    list.splice(lo, 0, e);
  }
  if (live.events.length > MAX_EVENTS) {
    for (const e of live.events.splice(0, live.events.length - MAX_EVENTS))
      live.seqs.delete(`${e.node}|${e.seq}|${e.at}|${e.event}`);
  }
}

function pushFrame(frame) {
  frames.push(frame);
  if (frames.length > MAX_FRAMES) frames.splice(0, frames.length - MAX_FRAMES);
}

/** The cluster as it was after frame `index`: each node's last view, the events so far. */
function stateAt(index) {
  const nodes = new Map();
  const events = [];
  for (let i = 0; i <= index && i < frames.length; i++) {
    const f = frames[i];
    if (f.kind === 'view') nodes.set(f.view.key, f.view);
    else events.push(f.event);
  }
  // a node no live view lists as a member any more had left by then (a stale view is its last word)
  const members = new Set();
  const fresh = [...nodes.values()].filter((v) => !v.stale);
  for (const v of fresh.length ? fresh : nodes.values()) for (const m of v.members) members.add(m.key);
  for (const k of [...nodes.keys()]) if (!members.has(k)) nodes.delete(k);
  events.sort((a, b) => a.at - b.at || a.seq - b.seq);
  return { servedBy: live.servedBy, nodes, events, now: frames[index]?.at ?? historyFrom };
}

/** The index of the last frame at or before `at` (-1: before every frame). */
function indexAt(at) {
  let i = -1;
  while (i + 1 < frames.length && frames[i + 1].at <= at) i++;
  return i;
}

const instantOf = (index) => frames[index]?.at ?? historyFrom;

const current = () => (replayAt === null ? { ...live, now: Date.now() - live.skew } : stateAt(replayAt));

/** A cluster fact's redraw on a timer of the page's own (see `schedule`); 0: none pending. */
let factTimer = 0;
let lastDrawAt = -Infinity;
/** Least time between two redraws a fact's timer makes (a frame at 60 Hz). */
const FACT_DRAW_EVERY_MS = 16;

function draw() {
  scheduled = false;
  clearTimeout(factTimer);
  factTimer = 0;
  lastDrawAt = performance.now();
  render();
}

/**
 * Redraws at the next animation frame. `fact === true` (a member's status, reachability or the
 * coordinator changed): also on a timer of the page's own, at most once per
 * FACT_DRAW_EVERY_MS, whichever comes first. An animation frame is the browser's and GPU
 * processes' to give: at 50 nodes on 2 cores a leave's frame reached the page while the change
 * had just woken 49 node processes, and its redraw waited ~170 ms for the next animation frame
 * with the page's own process idle.
 */
function schedule(fact) {
  if (fact === true && factTimer === 0)
    factTimer = setTimeout(draw, Math.max(0, lastDrawAt + FACT_DRAW_EVERY_MS - performance.now()));
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    if (scheduled) draw();
  });
}

/** Whether a stream delta moves what the console exists to show first (console-viewers.ts `carriesFact`). */
const carriesFact = (d) =>
  d.members !== undefined ||
  (d.set !== undefined &&
    (d.set.unreachable !== undefined ||
      d.set.reachability !== undefined ||
      d.set.coordinator !== undefined ||
      d.set.successor !== undefined));

// ---- rendering -------------------------------------------------------------------------------

function memberRows(s) {
  const rows = new Map();
  const served = s.nodes.get(s.servedBy);
  const ordered = [...(served ? [served] : []), ...s.nodes.values()];
  for (const v of ordered) for (const m of v.members) if (!rows.has(m.key)) rows.set(m.key, m);
  return [...rows.values()].sort((a, b) => a.ageRank - b.ageRank || (a.key < b.key ? -1 : 1));
}

function coordinatorOf(s) {
  const served = s.nodes.get(s.servedBy) ?? [...s.nodes.values()][0];
  return served?.coordinator;
}

const entitiesOf = (v) =>
  v?.entities
    ? Object.entries(v.entities)
        .map(([type, n]) => `${type}: ${n}`)
        .join(', ')
    : '';

/**
 * A member row's markup, kept per row object with what else it was made from (its node's view,
 * the coordinator and successor): a frame burst redraws the rows whose view changed, not all
 * fifty at every animation frame.
 */
const memberItems = new WeakMap();

function renderMembers(s, rows) {
  const coordinator = coordinatorOf(s);
  const seen = new Set([...s.nodes.values()].map((v) => v.coordinator).filter(Boolean));
  const disagree = seen.size > 1;
  const successor = (s.nodes.get(s.servedBy) ?? [...s.nodes.values()][0])?.successor;
  const html = `<p class="${disagree ? 'warn' : 'muted'}">${
    disagree
      ? `Nodes disagree on the coordinator: ${[...seen].map((k) => esc(short(k))).join(', ')}`
      : 'All nodes agree on the coordinator.'
  }</p><div class="scroll"><table><thead><tr><th scope="col">#</th><th scope="col">Address</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Roles</th><th scope="col">Inc.</th><th scope="col">Up since</th><th scope="col">Entities</th><th scope="col">Its coordinator</th><th scope="col">Actions</th></tr></thead><tbody>`;
  const items = [];
  for (const m of rows) {
    const v = s.nodes.get(m.key);
    const kept = memberItems.get(m);
    if (kept && kept.v === v && kept.coordinator === coordinator && kept.successor === successor) {
      items.push([m.key, kept.html]);
      continue;
    }
    const tags = `${m.key === coordinator ? ' <span class="tag">coordinator</span>' : ''}${m.key === successor ? ' <span class="tag">successor</span>' : ''}`;
    const own = v?.coordinator;
    items.push([
      m.key,
      `<tr data-testid="member" data-key="${esc(m.key)}" data-status="${esc(m.status)}"${m.key === coordinator ? ' data-coordinator="1"' : ''} class="${v?.stale ? 'stale' : ''}">
<td>${m.ageRank}</td><td title="${esc(m.key)}">${esc(m.address)}${tags}</td><td>${esc(v?.name ?? '')}</td>
<td><span class="status s-${esc(m.status)}">${esc(m.status)}</span>${v?.stale ? ' <span class="tag warn">stale</span>' : ''}</td>
<td>${esc(m.roles.join(', '))}</td><td>${v ? v.incarnation : ''}</td><td>${v?.upSince ? time(v.upSince) : ''}</td><td>${esc(entitiesOf(v))}</td>
<td class="${own && own !== coordinator ? 'warn' : ''}">${esc(short(own ?? '?'))}</td>
<td><button type="button" data-testid="action-leave" data-key="${esc(m.key)}" data-address="${esc(m.address)}">Leave</button>
<button type="button" data-testid="action-down" data-key="${esc(m.key)}">Down</button></td></tr>`,
    ]);
    memberItems.set(m, { v, coordinator, successor, html: items[items.length - 1][1] });
  }
  setHtml('members', `${html}</tbody></table></div>`);
  setKeyed($('members').querySelector('tbody'), items);
}

/** The matrix as drawn: its members, and each cell's element and state (row-major). */
let matrixDrawn = { subjects: '', cells: [], states: [] };

/**
 * The reachability matrix. While the members stay the same, only the cells whose state changed
 * are touched: at 50 nodes, re-parsing 2,500 cells for one red one cost the page a long task.
 */
function renderMatrix(s, rows) {
  const records = new Map();
  for (const v of s.nodes.values())
    for (const r of v.reachability) {
      const k = `${r.observer}\n${r.subject}`;
      if (records.get(k) !== 'terminated') records.set(k, r.status);
    }
  const subjects = rows.map((m) => m.key);
  const states = [];
  for (const o of subjects) {
    const view = s.nodes.get(o);
    const fallback = !view || view.stale ? 'unknown' : 'reachable';
    for (const j of subjects) states.push(o === j ? 'self' : (records.get(`${o}\n${j}`) ?? fallback));
  }
  const joined = subjects.join('\n');
  if (joined === matrixDrawn.subjects) {
    const { cells } = matrixDrawn;
    const n = subjects.length;
    for (let i = 0; i < states.length; i++) {
      if (matrixDrawn.states[i] === states[i]) continue;
      const cell = cells[i];
      const state = states[i];
      cell.dataset.state = state;
      cell.className = `m-${state}`;
      cell.title = `${short(subjects[Math.floor(i / n)])} → ${short(subjects[i % n])}: ${state}`;
    }
    matrixDrawn.states = states;
    return;
  }
  const names = subjects.map((k) => ({ key: esc(k), short: esc(short(k)) }));
  let html = `<table class="matrix"><thead><tr><th scope="col">observer ↓ / subject →</th>${names
    .map((k) => `<th scope="col" title="${k.key}">${k.short}</th>`)
    .join('')}</tr></thead><tbody>`;
  let i = 0;
  for (const o of names) {
    html += `<tr><th scope="row" title="${o.key}">${o.short}</th>`;
    for (const j of names) {
      const state = states[i++];
      html += `<td data-testid="matrix-cell" data-observer="${o.key}" data-subject="${j.key}" data-state="${state}" class="m-${state}" title="${o.short} → ${j.short}: ${state}"></td>`;
    }
    html += '</tr>';
  }
  const matrix = $('matrix');
  matrix.innerHTML = `${html}</tbody></table>`;
  matrixDrawn = { subjects: joined, cells: [...matrix.querySelectorAll('td')], states };
}

/** A resolver card without a countdown, kept per view. */
const sbrCards = new WeakMap();

function renderSbr(s) {
  const items = [];
  for (const v of s.nodes.values()) {
    const b = v.sbr;
    const left = typeof b.stableInMs === 'number' ? Math.max(0, b.stableInMs - (s.now - v.at)) : null;
    // a card without a countdown depends on its view only
    const kept = left === null ? sbrCards.get(v) : undefined;
    if (kept !== undefined) {
      items.push([v.key, kept]);
      continue;
    }
    const d = b.lastDecision;
    items.push([
      v.key,
      `<div class="card" data-testid="sbr" data-node="${esc(v.key)}"><h3>${esc(short(v.key))}</h3>
<p>${esc(b.strategy)} · <code>${esc(b.state ?? '')}</code></p>
<p>${left === null ? 'stable' : `decides in ${(left / 1000).toFixed(1)} s`}</p>
<p>${d ? `${time(d.at)} <strong>${esc(d.decision)}</strong> ${esc(d.reason ?? '')} downed: ${esc(d.downed.map(short).join(', ') || '–')}` : 'no decision yet'}</p>
<p class="muted">unreachable here: ${esc(v.unreachable.map(short).join(', ') || 'none')}</p></div>`,
    ]);
    if (left === null) sbrCards.set(v, items[items.length - 1][1]);
  }
  setHtml('sbr', '<div class="cards"></div>');
  setKeyed($('sbr').firstChild, items);
}

function renderSingletons(s) {
  const names = new Map();
  const served = s.nodes.get(s.servedBy);
  for (const v of [...(served ? [served] : []), ...s.nodes.values()])
    for (const x of v.singletons) if (!names.has(x.name)) names.set(x.name, x);
  let html =
    '<table><thead><tr><th scope="col">Singleton</th><th scope="col">Host</th><th scope="col">As each node sees it</th></tr></thead><tbody>';
  for (const [name, x] of names) {
    const running = [...s.nodes.values()].find((v) =>
      v.singletons.some((y) => y.name === name && y.runsHere),
    );
    const per = [...s.nodes.values()]
      .map((v) => {
        const y = v.singletons.find((z) => z.name === name);
        return y
          ? `${esc(short(v.key))}: ${esc(y.host ?? '–')}${y.handingOver ? ' (handing over)' : ''}`
          : '';
      })
      .filter(Boolean)
      .join('; ');
    html += `<tr data-testid="singleton" data-name="${esc(name)}" data-host="${esc(x.host ?? '')}"><td>${esc(name)}</td><td>${esc(x.host ?? '–')}${running ? ` <span class="tag">runs on ${esc(short(running.key))}</span>` : ''}</td><td>${per}</td></tr>`;
  }
  const elections = [...s.nodes.values()].filter((v) => v.election);
  const e = elections[0]?.election;
  setHtml(
    'singletons',
    `${html}</tbody></table>${
      e
        ? `<p>Election (${esc(e.kind)}): term ${esc(e.term ?? '?')}, leader ${esc(e.leader ?? 'none')}</p>`
        : ''
    }`,
  );
}

const hue = (key, keys) => Math.round((keys.indexOf(key) * 360) / Math.max(1, keys.length)) % 360;

function renderPartitions(s, rows) {
  let table;
  for (const v of s.nodes.values())
    if (v.partitions && (!table || v.partitions.version > table.version)) table = v.partitions;
  if (!table) {
    setHtml('partitions', '<p class="muted">no partition table</p>');
    return;
  }
  const keys = rows.map((m) => m.key);
  const counts = {};
  for (const o of table.owners) counts[o] = (counts[o] ?? 0) + 1;
  const moving = new Set(table.moving ?? []);
  let html = `<p>Version <span data-testid="partition-version">${table.version}</span> · ${table.owners.length} partitions · ${Object.entries(
    counts,
  )
    .map(
      ([k, n]) =>
        `<span class="swatch" style="--h:${hue(k, keys)}"></span>${esc(short(k) || 'unassigned')}: ${n}`,
    )
    .join(' · ')}</p><div class="grid">`;
  table.owners.forEach((owner, p) => {
    const backups = (table.backups[p] ?? []).map(short).join(', ');
    html += `<span data-testid="partition" data-partition="${p}" data-owner="${esc(owner)}" class="cell${moving.has(p) ? ' moving' : ''}${owner ? '' : ' none'}" style="--h:${hue(owner, keys)}" title="${p}: ${esc(short(owner) || 'unassigned')}${backups ? `; backups ${esc(backups)}` : ''}"></span>`;
  });
  setHtml('partitions', `${html}</div>`);
}

/**
 * Machines whose transitions the reader opened (`node\nid`): drawn with them, and kept open
 * across updates. The others are drawn without: a kill at 50 nodes replaced hundreds of
 * transition lines that nobody had open.
 */
const openMachines = new Set();
/** A machine's line, kept per machine (a delta replaces only the machines that changed). */
const machineItems = new WeakMap();

const transitionLines = (m) =>
  m.transitions.map((t) => `<li>${time(t.at)} ${esc(JSON.stringify(t.state))}</li>`).join('');

function machineItem(key, m) {
  const open = openMachines.has(`${key}\n${m.id}`);
  const kept = machineItems.get(m);
  if (kept?.key === key && kept.open === open) return kept.html;
  const state = JSON.stringify(m.state);
  const html = `<li data-testid="machine" data-node="${esc(key)}" data-machine="${esc(m.id)}" data-state="${esc(state)}"><details${open ? ' open' : ''}><summary><code>${esc(m.id.replace(/^\/system\//, ''))}</code> <strong>${esc(state)}</strong></summary><ol>${open ? transitionLines(m) : ''}</ol></details></li>`;
  machineItems.set(m, { key, open, html });
  return html;
}

const machineCard = (v) =>
  `<div class="card"><h3>${esc(short(v.key))}</h3><ul class="machines">${v.machines
    .map((m) => machineItem(v.key, m))
    .join('')}</ul></div>`;

// a machine opened: its transitions drawn now (toggle does not bubble: caught on the way down),
// and its line's markup as drawn updated, so that the next update does not replace it for that
document.addEventListener(
  'toggle',
  (e) => {
    const line = e.target.closest?.('[data-testid=machine]');
    if (!line) return;
    const { node, machine } = line.dataset;
    const id = `${node}\n${machine}`;
    if (e.target.open) openMachines.add(id);
    else openMachines.delete(id);
    const m = current()
      .nodes.get(node)
      ?.machines.find((x) => x.id === machine);
    if (!m) return;
    const list = e.target.querySelector('ol');
    if (e.target.open && list && !list.firstChild) list.innerHTML = transitionLines(m);
    const drawn = keyedDrawn.get(line.parentElement);
    const i = [...line.parentElement.children].indexOf(line);
    if (drawn && i >= 0) drawn.html[i] = machineItem(node, m);
  },
  true,
);

/** The machine cards as drawn: their nodes in order, each card's machines list. */
let machinesDrawn = { container: null, keys: '', lists: [] };

/**
 * The machine cards. While the nodes stay the same, a card whose machines changed has only the
 * changed machines' lines replaced (a kill at 50 nodes moves a few machines on every node: whole
 * cards re-parsed ~80 elements each, fifty a burst).
 */
function renderMachines(s) {
  setHtml('machines', '<div class="cards"></div>');
  const container = $('machines').firstChild;
  const views = [...s.nodes.values()];
  const keys = views.map((v) => v.key).join('\n');
  const drawn = machinesDrawn;
  if (drawn.container !== container || drawn.keys !== keys || container.children.length !== views.length) {
    container.innerHTML = views.map(machineCard).join('');
    views.forEach((v, i) => {
      const list = container.children[i].querySelector('ul');
      keyedDrawn.set(list, {
        keys: v.machines.map((m) => m.id).join('\n'),
        html: v.machines.map((m) => machineItem(v.key, m)),
      });
    });
    machinesDrawn = { container, keys, lists: views.map((v) => v.machines) };
    return;
  }
  views.forEach((v, i) => {
    if (drawn.lists[i] === v.machines) return;
    drawn.lists[i] = v.machines;
    setKeyed(
      container.children[i].querySelector('ul'),
      v.machines.map((m) => [m.id, machineItem(v.key, m)]),
    );
  });
}

/** An event's line, kept per event (events never change). */
const eventItems = new WeakMap();
const eventItem = (e) => {
  let html = eventItems.get(e);
  if (html === undefined) {
    html = `<li data-testid="timeline-item" data-node="${esc(e.node)}" data-event="${esc(e.event)}"><time>${time(e.at)}</time> <span class="node">${esc(short(e.node))}</span> <code>${esc(e.event)}</code> ${esc(e.msg ?? '')}</li>`;
    eventItems.set(e, html);
  }
  return html;
};
/** The events the timeline shows, newest first, as drawn. */
let timelineDrawn = [];

function renderTimeline(s) {
  const select = $('filter-node');
  const known = new Set([...select.options].map((o) => o.value));
  for (const e of s.events)
    if (!known.has(e.node)) {
      known.add(e.node);
      select.add(new Option(short(e.node), e.node));
    }
  const node = select.value;
  const kind = $('filter-kind').value.trim();
  const shown = s.events
    .filter((e) => (!node || e.node === node) && (!kind || e.event.includes(kind)))
    .slice(-500)
    .reverse();
  const list = $('timeline');
  // newer events on top of what is drawn: only they are added (and the oldest dropped), not
  // the 500 lines parsed and laid out again for each batch of events
  const top = timelineDrawn.length ? shown.indexOf(timelineDrawn[0]) : -1;
  const rest = top < 0 ? [] : shown.slice(top);
  if (
    top >= 0 &&
    list.children.length === timelineDrawn.length &&
    rest.every((e, i) => timelineDrawn[i] === e)
  ) {
    if (top > 0) list.insertAdjacentHTML('afterbegin', shown.slice(0, top).map(eventItem).join(''));
    while (list.children.length > shown.length) list.lastElementChild.remove();
  } else if (shown.length !== timelineDrawn.length || shown.some((e, i) => timelineDrawn[i] !== e)) {
    list.innerHTML = shown.map(eventItem).join('');
  }
  timelineDrawn = shown;
}

function renderReplay() {
  const slider = $('slider');
  const last = frames.length ? frames[frames.length - 1].at : Date.now();
  const max = offline ? last : Math.max(last, Date.now() - live.skew);
  slider.min = String(Math.floor(historyFrom));
  slider.max = String(Math.ceil(max));
  slider.value = String(replayAt === null ? slider.max : instantOf(replayAt));
  const f = replayAt === null ? undefined : frames[replayAt];
  $('at').textContent =
    replayAt === null
      ? 'live'
      : `${new Date(instantOf(replayAt)).toISOString()}${f?.kind === 'event' ? ` · ${short(f.event.node)} ${f.event.event}` : ''}`;
  $('live').setAttribute('aria-pressed', String(replayAt === null));
}

function render() {
  const s = current();
  const rows = memberRows(s);
  renderMembers(s, rows);
  renderMatrix(s, rows);
  renderSbr(s);
  renderSingletons(s);
  renderPartitions(s, rows);
  renderMachines(s);
  renderTimeline(s);
  renderReplay();
  $('source').textContent = offline
    ? `export loaded: ${frames.length} frames`
    : `served by ${short(live.servedBy)} · ${live.nodes.size} nodes${source && source.readyState !== 1 ? ' · reconnecting…' : ''}`;
  document.body.dataset.ready = '1';
}

// ---- data --------------------------------------------------------------------------------------

async function load() {
  const state = await fetch('/console/state').then((r) => r.json());
  live.servedBy = state.servedBy;
  live.skew = Date.now() - state.now;
  for (const [k, v] of Object.entries(state.nodes)) live.nodes.set(k, v);
  addEvents(state.events);
  historyFrom = state.historyFrom ?? historyFrom;
  render();
  follow();
  // the history is for the slider only: it comes after the first paint (at 50 nodes it is
  // megabytes to encode, send and parse, which the first paint used to wait for)
  fetch('/console/history')
    .then((r) => r.json())
    .then(mergeHistory)
    .catch(() => {});
}

/** The history before the stream began, put in front of the frames the stream brought since. */
function mergeHistory(history) {
  if (offline || !Array.isArray(history.frames)) return;
  const shown = replayAt === null ? null : instantOf(replayAt);
  frames = history.frames.concat(frames.filter((f) => f.at > history.to));
  if (frames.length > MAX_FRAMES) frames.splice(0, frames.length - MAX_FRAMES);
  historyFrom = history.from;
  if (shown !== null) replayAt = Math.max(0, indexAt(shown));
  schedule();
}

/**
 * A view with a stream delta applied (the node's view-delta.ts, the same rules), or undefined
 * when it does not apply: made from another revision, or naming a row the view lacks.
 */
function applyDelta(view, d) {
  if (!view || view.rev !== d.base) return undefined;
  const out = { ...view, ...d.set, at: d.at, stale: d.stale, rev: d.version };
  for (const f of d.unset ?? []) delete out[f];
  const keyed = (list, change, keyOf) => {
    const items = new Map(list.map((x) => [keyOf(x), x]));
    for (const x of change.put) items.set(keyOf(x), x);
    const next = (change.keys ?? list.map(keyOf)).map((k) => items.get(k));
    return next.some((x) => !x) ? undefined : next;
  };
  if (d.members) out.members = keyed(view.members, d.members, (r) => r.key);
  if (d.machines) out.machines = keyed(view.machines, d.machines, (m) => m.id);
  if (!out.members || !out.machines) return undefined;
  if (d.partitions) {
    const p = d.partitions;
    const owners = Array.from({ length: p.length }, (_, i) => view.partitions?.owners[i] ?? '');
    const backups = Array.from({ length: p.length }, (_, i) => view.partitions?.backups[i] ?? []);
    for (const [i, o] of p.owners) owners[i] = o;
    for (const [i, b] of p.backups) backups[i] = b;
    out.partitions = { version: p.version, owners, backups, ...(p.moving ? { moving: p.moving } : {}) };
  }
  return out;
}

let resyncAt = 0;
/** A delta did not apply: a new stream (it starts with every view whole), at most once a second. */
function resync() {
  if (Date.now() - resyncAt < 1000) return;
  resyncAt = Date.now();
  source?.close();
  follow();
}

function follow() {
  source = new EventSource('/console/stream');
  const at = () => Date.now() - live.skew;
  const put = (view, fact) => {
    live.nodes.set(view.key, view);
    pushFrame({ at: at(), kind: 'view', view });
    schedule(fact);
  };
  source.addEventListener('view', (m) => {
    const { sentAt: _, ...view } = JSON.parse(m.data);
    put(view);
  });
  source.addEventListener('delta', (m) => {
    const d = JSON.parse(m.data);
    const view = applyDelta(live.nodes.get(d.key), d);
    if (view) put(view, carriesFact(d));
    else resync();
  });
  source.addEventListener('timeline', (m) => {
    const events = JSON.parse(m.data);
    addEvents(events);
    for (const event of events) pushFrame({ at: at(), kind: 'event', event });
    schedule();
  });
  source.addEventListener('gone', (m) => {
    live.nodes.delete(JSON.parse(m.data).key);
    schedule(true);
  });
  source.onerror = schedule;
  source.onopen = schedule;
}

function goLive() {
  if (offline) return;
  replayAt = null;
  schedule();
}

/** Moves to the previous or next event frame (live: from the newest). */
function stepTo(direction) {
  let i = replayAt ?? frames.length;
  do i += direction;
  while (i >= 0 && i < frames.length && frames[i].kind !== 'event');
  if (i >= frames.length) return offline ? undefined : goLive();
  if (i < 0) return;
  replayAt = i;
  schedule();
}

function loadExport(file) {
  file
    .text()
    .then((text) => {
      const data = JSON.parse(text);
      if (!Array.isArray(data.frames) || typeof data.from !== 'number')
        throw new Error('not a console export');
      source?.close();
      offline = true;
      frames = data.frames.slice(-MAX_FRAMES).sort((a, b) => a.at - b.at);
      historyFrom = data.from;
      const served = frames.find((f) => f.kind === 'view');
      live.servedBy = served ? served.view.key : '';
      replayAt = frames.length - 1;
      result(`loaded ${file.name}: ${frames.length} frames`, true);
      schedule();
    })
    .catch((error) => result(`cannot load ${file.name}: ${error.message}`, false));
}

// ---- actions -----------------------------------------------------------------------------------

function result(text, ok) {
  const out = $('action-result');
  out.textContent = text;
  out.dataset.ok = ok ? '1' : '0';
}

function confirmThen(question, action) {
  const dialog = $('confirm');
  $('confirm-text').textContent = question;
  const done = (yes) => {
    $('confirm-yes').onclick = null;
    $('confirm-no').onclick = null;
    dialog.close();
    if (yes) action();
  };
  $('confirm-yes').onclick = () => done(true);
  $('confirm-no').onclick = () => done(false);
  dialog.showModal();
}

async function act(method, path, body) {
  const token = $('token').value.trim();
  try {
    const r = await fetch(path, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body ?? {}),
    });
    const answer = await r.json().catch(() => ({}));
    const message = answer.error ?? answer.message ?? JSON.stringify(answer);
    result(`${method} ${path}: ${r.status} ${message}`, r.ok);
  } catch (error) {
    result(`${method} ${path}: ${error.message}`, false);
  }
}

document.addEventListener('click', (e) => {
  const button = e.target.closest?.('button[data-testid^="action-"]');
  if (!button) return;
  const key = button.dataset.key;
  if (button.dataset.testid === 'action-down')
    confirmThen(`Down ${key}? The cluster removes it at once.`, () =>
      act('POST', `/cluster/down/${encodeURIComponent(key)}`),
    );
  else
    confirmThen(`Make ${key} leave the cluster?`, () =>
      key === live.servedBy
        ? act('POST', '/cluster/leave')
        : act('PUT', `/cluster/members/${encodeURIComponent(button.dataset.address)}`, {
            operation: 'Leave',
          }),
    );
});

$('slider').addEventListener('input', (e) => {
  replayAt = indexAt(Number(e.target.value));
  schedule();
});
$('back').addEventListener('click', () => stepTo(-1));
$('forward').addEventListener('click', () => stepTo(1));
$('live').addEventListener('click', goLive);
$('filter-node').addEventListener('change', schedule);
$('filter-kind').addEventListener('input', schedule);
$('load').addEventListener('change', (e) => e.target.files[0] && loadExport(e.target.files[0]));
// the countdowns move while nothing else does
setInterval(() => replayAt === null && !offline && schedule(), 1000);

load().catch((error) => {
  $('source').textContent = `cannot reach the console: ${error.message}`;
  document.body.dataset.ready = '1';
});

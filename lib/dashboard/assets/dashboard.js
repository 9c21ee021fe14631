// nestjs-shared-pool dashboard: renders the snapshots of `${base}/stream` (server-sent events).
// Plain browser JavaScript, no dependencies; every text from the server is escaped.
(function () {
  'use strict';
  const base = document.body.dataset.base;
  const $ = (id) => document.getElementById(id);
  const ICON = { healthy: '✓', degraded: '!', critical: '‼', exhausted: '■', failing: '✕', closed: '–' };
  const MEMBER_PAGE = 50;
  // pressed: a pointer is down; `held` is the snapshot that came meanwhile, rendered on release.
  const view = {
    search: '',
    troubleOnly: false,
    paused: false,
    pressed: false,
    held: null,
    open: new Map(),
    memberRows: new Map(),
    last: null,
  };

  const esc = (v) => String(v).replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
  const num = (v) =>
    v === null || v === undefined
      ? '–'
      : Number.isInteger(v)
        ? v.toLocaleString('en')
        : v.toLocaleString('en', { maximumFractionDigits: 2 });
  const pct = (v) => Math.round(Math.min(v, 9.99) * 100) + ' %';
  function ms(v) {
    if (v === null || v === undefined) return '–';
    if (v === 0) return '0 ms';
    if (v < 1) return v.toFixed(2) + ' ms';
    if (v < 1000) return v.toFixed(v < 10 ? 1 : 0) + ' ms';
    if (v < 60000) return (v / 1000).toFixed(1) + ' s';
    if (v < 3600000) return (v / 60000).toFixed(1) + ' min';
    return (v / 3600000).toFixed(1) + ' h';
  }
  const ago = (at, now) => ms(Math.max(0, now - at)) + ' ago';
  const healthOf = (p) => (p.closed ? 'closed' : p.health);
  const badge = (h) =>
    `<span class="health h-${esc(h)}" data-health="${esc(h)}"><span aria-hidden="true">${ICON[h] || '?'}</span> ${esc(h)}</span>`;
  const stat = (label, value, attr, shown = esc(label)) =>
    `<div><dt>${shown}</dt><dd${attr ? ' ' + attr : ''}>${value}</dd></div>`;
  // What the group card's words mean: shown as each term's tooltip and in the card's key.
  const GROUP_TERMS = [
    ['budget', 'connections open or opening in every member, of the most the group may hold (maxTotal)'],
    ['hungry', 'members with callers waiting that hold fewer connections than their share'],
    [
      'transfers',
      'connections moved from one member to another since the start: one closed to open one for a member that needed it',
    ],
    ['given back', 'connections members closed after a burst, returning them to the server, since the start'],
    [
      'forgotten',
      'members closed and dropped since the start: idle past memberIdleMs, or making room for a new key past maxMembers',
    ],
    ['share', "a member's part of the budget, in proportion to its demand"],
    [
      'hunger',
      'hungry: fewer connections than its share; satisfied: about its share; overfull: more than its share, the first to give one up',
    ],
  ];
  // The same for a fleet budget's block.
  const BUDGET_TERMS = [
    [
      'places',
      'connections open, opening or closing on every instance of the service, each holding a place in Redis, of the budget (maxTotal)',
    ],
    ['held here', "this instance's places, and its quota: its part of the budget by demand in the last exchange"],
    ['waiting elsewhere', 'callers waiting for a connection on the other instances, as last heard'],
    [
      'moved out',
      "connections this instance closed since the start so that another instance's waiting callers have their places",
    ],
    ['asking', "this instance's pools waiting in Redis for a place now"],
    [
      'lapsed',
      'places lost while held (this process was frozen past the lease TTL, or Redis lost them); their connections closed',
    ],
    [
      'mode',
      'redis: Redis counts the places; fallback or unreachable: Redis is not answering, and each instance opens at most its share; quarantine: a restarted Redis waits one lease TTL while instances register their places again',
    ],
  ];
  const TERM = new Map([...GROUP_TERMS, ...BUDGET_TERMS]);
  /** A term of GROUP_TERMS, its meaning as the tooltip. */
  const termLabel = (t) => `<abbr title="${esc(TERM.get(t))}" data-term="${esc(t)}">${esc(t)}</abbr>`;
  /** A stat whose label is a term of GROUP_TERMS. */
  const term = (label, value, attr) => stat(label, value, attr, termLabel(label));
  const termsKey = (name, terms = GROUP_TERMS) => {
    const key = 'terms:' + name;
    const open = view.open.get(key) === true;
    return `<details class="terms" data-terms data-key="${esc(key)}" data-drawn="${open ? 'open' : 'closed'}"${open ? ' open' : ''}><summary>What these words mean</summary><dl>${terms.map(([t, meaning]) => `<div data-term-meaning="${esc(t)}"><dt>${esc(t)}</dt><dd>${esc(meaning)}</dd></div>`).join('')}</dl></details>`;
  };
  function bar(used, limit, label) {
    const share = limit > 0 ? Math.min(used / limit, 1) : 0;
    // The width is set after rendering (fill()): the page's CSP allows no inline style.
    return `<div class="barline" role="img" aria-label="${esc(label)}"><div class="bar${used >= limit && limit > 0 ? ' full' : ''}"><span data-fill="${share.toFixed(4)}"></span></div><b>${esc(num(used))}/${esc(num(limit))}</b></div>`;
  }

  function matches(text) {
    return view.search === '' || String(text).toLowerCase().includes(view.search);
  }

  function renderSummary(s) {
    const counts = {};
    for (const p of s.pools) counts[healthOf(p)] = (counts[healthOf(p)] || 0) + 1;
    for (const g of s.groups) counts[g.health] = (counts[g.health] || 0) + 1;
    const waiting = s.pools.reduce((n, p) => n + p.waiting, 0) + s.groups.reduce((n, g) => n + g.waiting, 0);
    const order = ['failing', 'exhausted', 'critical', 'degraded', 'healthy', 'closed'];
    $('summary').innerHTML =
      order
        .filter((h) => counts[h])
        .map((h) => `<span class="chip h-${h}" data-summary="${h}">${badge(h)} <b>${counts[h]}</b></span>`)
        .join('') +
      `<span class="chip" data-summary="waiting">waiting <b>${num(waiting)}</b></span>` +
      `<span class="chip">pages open <b>${num(s.viewers)}</b></span>`;
  }

  function rates(p) {
    const moved = [];
    const r = p.rates;
    for (const [key, label] of [
      ['timeouts', 'timeouts'],
      ['failedFast', 'failed fast'],
      ['leaks', 'leaks'],
      ['expiredHolds', 'expired holds'],
      ['createFailures', 'create failures'],
    ]) {
      if (r[key] > 0) moved.push(`<span class="chip" data-rate="${key}">${label} <b>${num(r[key])}/s</b></span>`);
    }
    for (const [reason, v] of Object.entries(r.retiredBy))
      if (v > 0)
        moved.push(
          `<span class="chip" data-rate="retired-${esc(reason)}">retired (${esc(reason)}) <b>${num(v)}/s</b></span>`,
        );
    return moved.length === 0
      ? '<p class="quiet">No timeouts, failures, leaks or retirements in the last minute.</p>'
      : `<div class="moved">${moved.join('')}</div>`;
  }

  function timings(p) {
    if (p.waitMs === null) return '';
    const row = (label, q) =>
      `<tr><td>${label}</td><td>${num(q.count)}</td><td>${ms(q.p50)}</td><td>${ms(q.p90)}</td><td>${ms(q.p99)}</td></tr>`;
    return `<h3>Last minute</h3><table class="timings"><thead><tr><th>timing</th><th>count</th><th>p50</th><th>p90</th><th>p99</th></tr></thead><tbody>${row('wait for a connection', p.waitMs)}${row('hold', p.holdMs)}</tbody></table>`;
  }

  function timeline(items, now) {
    if (items.length === 0) return '';
    return `<h3>Health changes</h3><div class="timeline">${items
      .slice(-12)
      .map(
        (t) =>
          `<span class="h-${esc(t.health)}" title="${esc(new Date(t.at).toLocaleTimeString())}">${ICON[t.health] || ''} ${esc(t.health)} · ${esc(ago(t.at, now))}</span>`,
      )
      .join('')}</div>`;
  }

  function limiter(l, now) {
    if (l === null) return '';
    const modes =
      l.modes.length > 1
        ? `<p class="quiet">mode changes: ${l.modes
            .slice(-6)
            .map((m) => `${esc(m.mode)} (${esc(ago(m.at, now))})`)
            .join(' → ')}</p>`
        : '';
    const keys =
      l.topKeys.length === 0
        ? ''
        : `<table class="keys"><thead><tr><th>key</th><th>${l.topKeys.some((k) => typeof k.limit === 'number') ? 'leases / limit' : 'leases'}</th></tr></thead><tbody>${l.topKeys.map((k) => `<tr data-key="${esc(k.key)}"><td>${esc(k.key)}</td><td>${k.limit === undefined || k.limit === null ? num(k.leases) : `${num(k.leases)} / ${Number.isFinite(k.limit) ? num(k.limit) : 'none'}`}</td></tr>`).join('')}</tbody></table>`;
    const st = l.standing;
    const waitingLine = st
      ? `<p class="quiet" data-standing="${st.standing}">controlled waiting: queue <b>${st.standing ? 'standing: newcomers refused at once' : 'clear'}</b> · target ${Number.isFinite(st.targetMs) ? esc(ms(st.targetMs)) : 'not known yet'} · stood ${num(st.stood)} times, shed ${num(st.shed)}</p>`
      : '';
    const classes =
      l.classes.length === 0
        ? ''
        : `<table class="keys classes"><thead><tr><th>class</th><th>share</th><th>holds</th><th>waiting</th><th>admitted</th><th>refused</th></tr></thead><tbody>${l.classes.map((c) => `<tr data-class="${esc(c.name)}"><td>${esc(c.name)}</td><td>${num(Math.round(c.share * 100))} %</td><td>${num(c.used)}</td><td>${num(c.waiting)}</td><td>${num(c.admitted)}</td><td>${num(c.refused)}</td></tr>`).join('')}</tbody></table>`;
    const a = l.adaptive;
    const adaptive = a
      ? `<p class="quiet" data-adaptive="${esc(a.algorithm)}" data-adaptive-limit="${a.limit}">adaptive (${esc(a.algorithm)}${a.shared ? ', one limit for every instance' : ''}): limit <b>${num(a.limit)}</b> within ${num(a.min)}–${num(a.max)} · ${num(a.successes)} successes, ${num(a.overloads)} overloads, ${num(a.ignored)} ignored${a.pausedMs > 0 ? ` · <b>paused ${esc(ms(a.pausedMs))}</b> (Retry-After)` : ''}${
          a.changes.length > 0
            ? ` · last changes: ${a.changes
                .slice(-5)
                .map((c) => `${num(c.from)}→${num(c.to)} (${esc(c.reason)})`)
                .join(', ')}`
            : ''
        }</p>`
      : '';
    return `<h3>Admission limiter</h3>${adaptive}<div class="limiter" data-limiter-mode="${esc(l.mode)}"><dl class="grid">${stat('mode', `<span data-field="mode">${esc(l.mode)}</span>`)}${stat('health', badge(l.health))}${stat('used / limit', l.limit === null ? `${num(l.used)} / none` : bar(l.used, l.limit, `${l.used} of ${l.limit} global leases used`))}${stat('per key', l.perKey === null ? 'none' : l.perKey === 'by key' ? 'by key' : num(l.perKey))}${stat('held here', num(l.held))}${stat('waiting', num(l.waiting))}${stat('refused: global', `${num(l.refused.global)} <small>(${num(l.refusedPerSec.global)}/s)</small>`, 'data-refused="global"')}${stat('refused: per key', `${num(l.refused.key)} <small>(${num(l.refusedPerSec.key)}/s)</small>`, `data-refused="key" data-value="${l.refused.key}"`)}${stat('lost', num(l.lost))}</dl>${l.lastError ? `<p class="error">${esc(l.lastError)}</p>` : ''}${waitingLine}${modes}${classes}${keys}</div>`;
  }

  function connections(p) {
    if (p.connections.length === 0) return '<h3>Connections</h3><p class="quiet">None open.</p>';
    const rows = p.connections
      .map(
        (c) =>
          `<div class="conn ${esc(c.state)}" data-conn="${c.id}" data-clients="${c.clients}" data-state="${esc(c.state)}">${bar(c.clients, p.clientLimit, `connection ${c.id}: ${c.clients} of ${p.clientLimit} callers`)}#${c.id} ${esc(c.state)} · ${esc(ms(c.ageMs))} old · ${num(c.uses)} uses${c.clients === 0 && c.state === 'ready' ? ' · idle ' + esc(ms(c.idleMs)) : ''}</div>`,
      )
      .join('');
    const more = p.moreConnections > 0 ? `<p class="quiet">and ${num(p.moreConnections)} more connections</p>` : '';
    return `<h3>Connections · callers over clientLimit ${num(p.clientLimit)}</h3><div class="conns">${rows}</div>${more}`;
  }

  function poolCard(p, now, many) {
    const h = healthOf(p);
    const open = view.open.has('pool:' + p.name)
      ? view.open.get('pool:' + p.name)
      : !many || p.trouble >= 2000000 || p.waiting > 0;
    const brief = `${num(p.clients)} callers on ${num(p.size)}/${num(p.maxSize)} connections · ${pct(p.utilization)} used${p.waiting > 0 ? ` · <b>${num(p.waiting)} waiting</b> (oldest ${esc(ms(p.oldestWaitMs))})` : ''}`;
    return `<details class="card h-${esc(h)}" data-pool="${esc(p.name)}" data-key="pool:${esc(p.name)}" data-drawn="${open ? 'open' : 'closed'}"${open ? ' open' : ''}><summary><span class="name">${esc(p.name)}</span> ${badge(h)} <span class="brief">${brief}</span></summary><div class="body">
<dl class="grid">${stat('size / max', `${num(p.size)} / ${num(p.maxSize)}`, 'data-field="size"')}${stat('ready', num(p.ready), 'data-field="ready"')}${stat('opening', num(p.opening))}${stat('draining', num(p.draining))}${stat('idle', num(p.idle), 'data-field="idle"')}${stat('callers', num(p.clients), 'data-field="clients"')}${stat('waiting', num(p.waiting), 'data-field="waiting"')}${stat('oldest wait', ms(p.oldestWaitMs))}${stat('acquired', `${num(p.rates.acquired)}/s`)}${stat('breaker', esc(p.breaker))}</dl>
${p.lastError ? `<p class="error" data-field="lastError">last error: ${esc(p.lastError)}</p>` : ''}
${connections(p)}${timings(p)}<h3>Moved in the last minute</h3>${rates(p)}${limiter(p.limiter, now)}${timeline(p.timeline, now)}</div></details>`;
  }

  function groupBlock(g, now) {
    const search = view.search;
    const members = search === '' || matches(g.name) ? g.members : g.members.filter((m) => matches(m.key));
    const shown = view.memberRows.get(g.name) || MEMBER_PAGE;
    const rows = members
      .slice(0, shown)
      .map(
        (m) =>
          `<tr data-member="${esc(m.key)}" data-quota="${m.quota}" data-hunger="${esc(m.hunger)}"><td class="key" title="${esc(m.key)}">${esc(m.key)}</td><td>${num(m.quota)}</td><td>${num(m.connections)}</td><td>${num(m.clients)}</td><td>${num(m.waiting)}</td><td>${esc(m.hunger)}</td><td class="wide">${badge(m.health)}</td><td class="wide">${ms(m.holdMs)}</td></tr>`,
      )
      .join('');
    const hidden =
      members.length - Math.min(shown, members.length) + (search === '' ? g.memberCount - g.members.length : 0);
    const more =
      hidden > 0
        ? `<button type="button" class="more" data-more="${esc(g.name)}">Show ${Math.min(MEMBER_PAGE, hidden)} more of ${num(hidden)}</button>`
        : '';
    return `<section class="group card h-${esc(g.health)}" data-group="${esc(g.name)}"><div><span class="name">${esc(g.name)}</span> ${badge(g.health)}</div>
<dl class="grid">${term('budget', bar(g.total, g.maxTotal, `${g.total} of ${g.maxTotal} connections of the budget`), 'data-field="budget"')}${stat('members', num(g.memberCount))}${term('hungry', num(g.hungry))}${stat('waiting', num(g.waiting))}${stat('used', pct(g.utilization))}${term('transfers', `${num(g.transfers)} <small>(${num(g.transfersPerSec)}/s)</small>`)}${term('given back', num(g.givenBack))}${term('forgotten', num(g.forgotten))}</dl>
<h3>Members · most trouble first</h3><div class="scroll"><table class="members"><thead><tr><th>member</th><th>${termLabel('share')}</th><th>connections</th><th>callers</th><th>waiting</th><th>${termLabel('hunger')}</th><th class="wide">health</th><th class="wide">mean hold</th></tr></thead><tbody>${rows || '<tr><td colspan="8" class="quiet">No member matches.</td></tr>'}</tbody></table></div>${more}${termsKey(g.name)}${timeline(g.timeline, now)}</section>`;
  }

  function budgetBlock(b, now) {
    const rows = b.fleet
      .map(
        (f) =>
          `<tr data-instance="${esc(f.instance)}" data-places="${f.places}" data-quota="${f.quota}" data-waiting="${f.waiting}"${f.self ? ' data-self' : ''}><td class="key">${esc(f.instance)}${f.self ? ' <small>(this one)</small>' : ''}</td><td>${bar(f.places, Math.max(f.quota, 1), `${f.places} places, quota ${f.quota}`)}</td><td>${num(f.quota)}</td><td>${num(f.inUse)}</td><td>${num(f.waiting)}</td><td class="wide">${f.waiting > 0 ? ms(f.waitedMs) : '–'}</td></tr>`,
      )
      .join('');
    const fleet =
      b.fleet.length === 0
        ? '<p class="quiet">No exchange of demand yet (or Redis is unreachable): no other instance heard.</p>'
        : `<div class="scroll"><table class="members instances"><thead><tr><th>instance</th><th>places</th><th>quota</th><th>in use</th><th>waiting</th><th class="wide">longest wait</th></tr></thead><tbody>${rows}</tbody></table></div>`;
    return `<section class="budget card h-${esc(b.health)}" data-budget="${esc(b.name)}"><div><span class="name">${esc(b.name)}</span> ${badge(b.health)} <span class="quiet">pools here: ${b.pools.map(esc).join(', ')}</span></div>
<dl class="grid">${term('places', bar(b.fleetHeld, b.maxTotal, `${b.fleetHeld} of ${b.maxTotal} places of the budget held by the fleet`), 'data-field="places"')}${term('held here', `${num(b.held)} <small>(quota ${num(b.quota)})</small>`, 'data-field="held"')}${term('waiting elsewhere', num(b.waitingElsewhere), 'data-field="waiting-elsewhere"')}${term('moved out', `${num(b.movedOut)} <small>(${num(b.movedPerSec)}/s)</small>`, 'data-field="moved-out"')}${term('asking', num(b.asking))}${term('lapsed', num(b.lapsed))}${term('mode', `<span data-field="budget-mode">${esc(b.mode)}</span>`)}${stat('instances', num(b.fleet.length), 'data-field="instances"')}</dl>
${b.lastError ? `<p class="error">last error: ${esc(b.lastError)}</p>` : ''}
<h3>Instances · places as Redis counts them, demand as last heard</h3>${fleet}${termsKey('budget:' + b.name, BUDGET_TERMS)}${timeline(b.timeline, now)}</section>`;
  }

  /** A selector for the focused control, to give focus back after a re-render. */
  function focused() {
    const active = document.activeElement;
    if (!active || active === document.body) return null;
    if (active.tagName === 'SUMMARY' && active.parentElement.dataset.key)
      return `[data-key="${CSS.escape(active.parentElement.dataset.key)}"] > summary`;
    if (active.dataset && active.dataset.more) return `[data-more="${CSS.escape(active.dataset.more)}"]`;
    return null;
  }

  function render(s) {
    const focus = focused();
    // A card the user opened or closed since it was drawn keeps that state, though its toggle event has not come yet.
    for (const d of document.querySelectorAll('details[data-drawn]'))
      if (d.open !== (d.dataset.drawn === 'open')) view.open.set(d.dataset.key, d.open);
    view.last = s;
    renderSummary(s);
    const many = s.pools.length > 8;
    const pools = s.pools.filter(
      (p) => matches(p.name) && (!view.troubleOnly || p.trouble >= 1000000 || p.waiting > 0),
    );
    $('pool-count').textContent =
      pools.length === s.pools.length ? `(${s.pools.length})` : `(${pools.length} of ${s.pools.length})`;
    $('pools').innerHTML =
      pools.length === 0 ? '<p class="quiet">No pool matches.</p>' : pools.map((p) => poolCard(p, s.at, many)).join('');
    const groups = s.groups.filter(
      (g) =>
        (matches(g.name) || g.members.some((m) => matches(m.key))) &&
        (!view.troubleOnly || g.trouble >= 1000000 || g.waiting > 0),
    );
    const budgets = (s.budgets || []).filter(
      (b) => (matches(b.name) || b.pools.some((p) => matches(p))) && (!view.troubleOnly || b.health !== 'healthy'),
    );
    $('budgets-section').hidden = (s.budgets || []).length === 0;
    $('budget-count').textContent = `(${(s.budgets || []).length})`;
    $('budgets').innerHTML = budgets.map((b) => budgetBlock(b, s.at)).join('');
    $('groups-section').hidden = s.groups.length === 0;
    $('group-count').textContent = `(${s.groups.length})`;
    $('groups').innerHTML = groups.map((g) => groupBlock(g, s.at)).join('');
    for (const el of document.querySelectorAll('[data-fill]')) el.style.width = Number(el.dataset.fill) * 100 + '%';
    const again = focus && document.querySelector(focus);
    if (again) again.focus();
  }

  // The user's choices survive re-renders: which cards are open, how many members are shown.
  document.addEventListener(
    'toggle',
    (e) => {
      const key = e.target.dataset && e.target.dataset.key;
      if (key) view.open.set(key, e.target.open);
    },
    true,
  );
  document.addEventListener('click', (e) => {
    const more = e.target.closest && e.target.closest('[data-more]');
    if (!more) return;
    const name = more.dataset.more;
    view.memberRows.set(name, (view.memberRows.get(name) || MEMBER_PAGE) + MEMBER_PAGE);
    if (view.last) render(view.last);
  });
  // A render replaces the cards, and a click whose press and release land on different elements
  // is no click: a snapshot that comes while a pointer is down waits for its release.
  document.addEventListener('pointerdown', () => void (view.pressed = true), true);
  const released = () => {
    view.pressed = false;
    // After the click this release makes, which comes once the release's handlers are done.
    setTimeout(() => {
      const held = view.held;
      if (held === null || view.pressed) return;
      view.held = null;
      if (!view.paused) render(held);
    }, 0);
  };
  window.addEventListener('pointerup', released, true);
  window.addEventListener('pointercancel', released, true);
  // A release the page never sees (the window lost focus meanwhile) must not hold updates for good.
  window.addEventListener('blur', released);
  $('search').addEventListener('input', (e) => {
    view.search = e.target.value.trim().toLowerCase();
    if (view.last) render(view.last);
  });
  $('trouble-only').addEventListener('change', (e) => {
    view.troubleOnly = e.target.checked;
    if (view.last) render(view.last);
  });
  $('pause').addEventListener('click', (e) => {
    view.paused = !view.paused;
    e.target.setAttribute('aria-pressed', String(view.paused));
    e.target.textContent = view.paused ? 'Resume' : 'Pause';
  });

  const status = $('status');
  const source = new EventSource(base + '/stream');
  let updates = 0;
  source.addEventListener('snapshot', (e) => {
    const s = JSON.parse(e.data);
    updates++;
    document.body.dataset.updates = String(updates);
    status.className = 'status live';
    status.textContent = `live · ${new Date(s.at).toLocaleTimeString()}${view.paused ? ' · paused' : ''}`;
    if (view.paused) return;
    if (view.pressed) view.held = s;
    else render(s);
  });
  source.addEventListener('error', () => {
    status.className = 'status down';
    status.textContent = source.readyState === EventSource.CLOSED ? 'disconnected' : 'reconnecting…';
  });
})();

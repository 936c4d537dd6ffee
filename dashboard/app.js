// Landfall dashboard: plain JavaScript, no framework, nothing fetched from elsewhere.
//
// Bot view (an API key): GET /v1/account, GET /v1/tip-floor, GET /v1/analytics, the account's
// recent transactions from GET /v1/transactions when it opens (so a tab opened after a send shows
// it), then the live /v1/stream (the key goes in the first WebSocket message), GET /v1/status/{signature}/trace on a
// click (with the post-mortem of a transaction that did not land). Operator view (the
// metrics token, or none where /metrics is open, as on the admin listener): GET /metrics and
// GET /health every 2 s. Keys live in sessionStorage (this tab only) and go out as headers, never
// in a URL, where proxies and access logs would keep them. Everything shown is set with
// textContent or as SVG attributes: nothing a server or a peer sends is parsed as HTML.

const KEY_ITEM = 'landfall.apiKey';
const TOKEN_ITEM = 'landfall.metricsToken';
const ACCOUNT_REFRESH_MS = 5000;
const OPERATOR_REFRESH_MS = 2000;
/** Transactions kept in the live table and in the charts. */
const MAX_ROWS = 200;
/** Recent transactions read when the bot view opens: one page of GET /v1/transactions (its largest). */
const HISTORY_ROWS = 100;
const LATENCY_BOUNDS_MS = [25, 50, 100, 250, 500, 1000, 2000, 5000];
const SLOT_BOUNDS = [0, 1, 2, 3, 4, 6, 8, 12, 20];
const SVG_NS = 'http://www.w3.org/2000/svg';
/** The stream's close code for a missing, invalid or revoked key (src/http/stream.ts CLOSE.unauthorized). */
const STREAM_UNAUTHORIZED = 4001;

const $ = (id) => document.getElementById(id);
const fmt = (n) => (n === null || n === undefined || Number.isNaN(n) ? '–' : Number(n).toLocaleString('en-US', { maximumFractionDigits: 2 }));
const pct = (x) => (x === null || Number.isNaN(x) ? '–' : `${(x * 100).toFixed(1)} %`);
const seconds = (s) => (s === null || Number.isNaN(s) ? '–' : s < 0.001 ? `${(s * 1e6).toFixed(0)} µs` : s < 1 ? `${(s * 1000).toFixed(1)} ms` : `${s.toFixed(2)} s`);
const text = (id, v) => ($(id).textContent = String(v));

function svgEl(tag, attrs = {}, label) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (label !== undefined) e.textContent = label;
  return e;
}

function svgRoot(width, height) {
  return svgEl('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img' });
}

function showError(id, message) {
  const e = $(id);
  e.hidden = message === null;
  e.textContent = message ?? '';
}

/** A JSON GET with a bearer credential; throws with the server's error text otherwise. */
async function getJson(path, credential) {
  const r = await fetch(path, { headers: credential ? { authorization: `Bearer ${credential}` } : {} });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await errorText(r)}`);
  return r.json();
}

async function errorText(r) {
  try {
    const body = await r.json();
    return body?.error?.message ? `${body.error.message}${body.error.reason ? ` (${body.error.reason})` : ''}` : JSON.stringify(body);
  } catch {
    return r.statusText;
  }
}

// ---- charts ----------------------------------------------------------------------------------

/** Counts of `values` per bucket (`bounds` are upper bounds; the last bucket is above them). */
function bucketize(values, bounds) {
  const counts = new Array(bounds.length + 1).fill(0);
  for (const v of values) {
    let i = 0;
    while (i < bounds.length && v > bounds[i]) i++;
    counts[i]++;
  }
  return counts.map((count, i) => ({ label: i < bounds.length ? `≤${bounds[i]}` : `>${bounds[bounds.length - 1]}`, count }));
}

/** Width of a chart label's character at the charts' 10px font (an upper bound: digits, ≤, >, :), and the least gap between labels. */
const LABEL_CHAR_PX = 6.2;
const LABEL_GAP_PX = 3;

/** A bar chart of labelled counts, each bar titled with its count. */
function barChart(container, buckets) {
  const w = 320, h = 140, pad = 18;
  const max = Math.max(1, ...buckets.map((b) => b.count));
  const bw = (w - pad) / buckets.length;
  const root = svgRoot(w, h);
  root.append(svgEl('line', { class: 'axis', x1: pad, y1: h - pad, x2: w, y2: h - pad }));
  let labelEnd = -Infinity;
  buckets.forEach((b, i) => {
    const bh = ((h - 2 * pad) * b.count) / max;
    const x = pad + i * bw + 2;
    const rect = svgEl('rect', { class: 'bar-rect', x, y: h - pad - bh, width: bw - 4, height: bh, 'data-count': b.count });
    rect.append(svgEl('title', {}, `${b.label}: ${b.count}`));
    root.append(rect);
    // A label only where it clears the last one drawn: 24 hourly buckets, or ≤1000 ≤2000 ≤5000
    // in narrow bars, were written over each other. Every bar keeps its label in its title.
    const cx = x + (bw - 4) / 2;
    const half = (b.label.length * LABEL_CHAR_PX) / 2;
    if (cx - half >= labelEnd + LABEL_GAP_PX) {
      root.append(svgEl('text', { x: cx, y: h - 5, 'text-anchor': 'middle' }, b.label));
      labelEnd = cx + half;
    }
    // The count over its bar where it fits the bar's width (else in the bar's title only).
    if (b.count > 0 && String(b.count).length * LABEL_CHAR_PX <= bw) root.append(svgEl('text', { x: cx, y: h - pad - bh - 3, 'text-anchor': 'middle' }, String(b.count)));
  });
  container.replaceChildren(root);
}

/** Tips (dots, in arrival order) against horizontal lines: the floor's p50 and p75 and the plan minimum. */
function tipsChart(container, tips, lines) {
  const w = 320, h = 140, pad = 18;
  const all = [...tips, ...lines.map((l) => l.value)].filter((v) => v !== null);
  const max = Math.max(1, ...all) * 1.1;
  const y = (v) => h - pad - ((h - 2 * pad) * v) / max;
  const root = svgRoot(w, h);
  root.append(svgEl('line', { class: 'axis', x1: pad, y1: h - pad, x2: w, y2: h - pad }));
  // Lines at one value share one label ("floor p50 = floor p75 = plan minimum 1,000,000": on a
  // fresh starter account all three are the minimum), and labels closer than a text line apart
  // are moved apart (the lines stay where their values are): drawn at their lines' heights they
  // were written over each other.
  const labels = [];
  for (const l of lines) {
    if (l.value === null) continue;
    root.append(svgEl('line', { class: l.cls, x1: pad, x2: w, y1: y(l.value), y2: y(l.value) }));
    const same = labels.find((g) => g.value === l.value);
    if (same) same.names.push(l.label);
    else labels.push({ value: l.value, names: [l.label] });
  }
  const LINE_PX = 12;
  labels.sort((a, b) => b.value - a.value); // top first
  let last = -Infinity;
  for (const g of labels) {
    const at = Math.max(y(g.value) - 3, last + LINE_PX);
    last = at;
    root.append(svgEl('text', { x: w - 2, y: at, 'text-anchor': 'end' }, `${g.names.join(' = ')} ${fmt(g.value)}`));
  }
  const step = (w - 2 * pad) / Math.max(1, tips.length);
  tips.forEach((t, i) => {
    const dot = svgEl('circle', { class: 'tip', cx: pad + step * (i + 0.5), cy: y(t), r: 3 });
    dot.append(svgEl('title', {}, `${fmt(t)} lamports`));
    root.append(dot);
  });
  container.replaceChildren(root);
}

/**
 * A trace as a timeline: one row per leader, one mark per attempt at its time since the request
 * (outcome as colour, slot and round in its title), and the landing as a vertical line.
 */
function timeline(container, trace, landedAtMs) {
  const w = 640, rowH = 22, pad = 120;
  const rows = [...new Set(trace.attempts.map((a) => a.leader ?? a.tpu ?? '(held)'))];
  const h = 30 + rows.length * rowH;
  const endUs = Math.max(1, ...trace.attempts.map((a) => a.at_us), landedAtMs === null ? 0 : landedAtMs * 1000);
  const x = (us) => pad + ((w - pad - 10) * us) / endUs;
  const root = svgRoot(w, h);
  rows.forEach((r, i) => root.append(svgEl('text', { x: 2, y: 16 + i * rowH }, r.length > 18 ? `${r.slice(0, 8)}…${r.slice(-6)}` : r)));
  for (const a of trace.attempts) {
    const row = rows.indexOf(a.leader ?? a.tpu ?? '(held)');
    const mark = svgEl('circle', { class: `attempt outcome-${a.outcome}`, cx: x(a.at_us), cy: 12 + row * rowH, r: 5 });
    mark.append(svgEl('title', {}, `${a.outcome} at ${(a.at_us / 1000).toFixed(2)} ms, slot ${a.slot}, round ${a.round}${a.reason ? `, ${a.reason}` : ''}${a.close_code !== null ? `, close code ${a.close_code}` : ''}`));
    root.append(mark);
  }
  if (landedAtMs !== null) {
    root.append(svgEl('line', { class: 'landed', x1: x(landedAtMs * 1000), x2: x(landedAtMs * 1000), y1: 0, y2: h - 16 }));
    root.append(svgEl('text', { x: x(landedAtMs * 1000), y: h - 4, 'text-anchor': 'end' }, `landed ${landedAtMs} ms`));
  }
  root.append(svgEl('text', { x: pad, y: h - 4 }, '0'));
  container.replaceChildren(root);
}

// ---- bot view --------------------------------------------------------------------------------

const bot = {
  key: null,
  socket: null,
  timer: null,
  /** signature → the latest pushed record. */
  txs: new Map(),
  selected: null,
  floor: null,
  account: null,
  /** The analytics window shown: '1h' or '24h'. */
  window: '24h',
};

function renderAccount(a) {
  bot.account = a;
  text('plan', a.plan);
  text('plan-since', `member since ${a.member_since.slice(0, 10)}`);
  text('max-tps', fmt(a.limits.max_tps));
  text('min-tip-bp', fmt(a.limits.min_tip_bp));
  text('min-tip-lamports', fmt(a.limits.min_tip_bp * a.lamports_per_point));
  text('points', fmt(a.usage.service_points));
  text('tx-total', fmt(a.usage.transactions_total));
  text('tx-today', fmt(a.usage.transactions_today));
  const next = a.next_tier;
  text('next-tier', next ? `${next.plan}: ${next.progress_percent} %` : 'top tier');
  $('next-tier-bar').style.width = `${next ? next.progress_percent : 100}%`;
  text('next-tier-detail', next ? `${fmt(next.remaining_bp)} BP to go; then ${next.benefits.new_max_tps} sends/s, min tip ${next.benefits.new_tip_bp} BP` : '');
}

async function refreshBot() {
  try {
    const [account, floor, analytics] = await Promise.all([
      getJson('/v1/account', bot.key),
      getJson('/v1/tip-floor', bot.key),
      getJson(`/v1/analytics?window=${bot.window}`, bot.key),
    ]);
    renderAccount(account);
    renderAnalytics(analytics);
    bot.floor = floor;
    renderCharts();
    showError('bot-error', null);
    $('bot-body').hidden = false;
    return true;
  } catch (e) {
    showError('bot-error', e.message);
    return false;
  }
}

/** GET /v1/analytics: the summary, the landing rate over time, the table by leader. */
function renderAnalytics(v) {
  const slots = v.slots_to_land;
  text(
    'analytics-summary',
    v.transactions === 0
      ? `no transaction reached an outcome in the ${v.window === '1h' ? 'last hour' : 'last 24 h'}`
      : `${fmt(v.landed)} of ${fmt(v.transactions)} landed (${pct(v.landing_rate)}); ${fmt(v.expired)} expired, ${fmt(v.failed)} failed on chain; slots to land p50 ≤${slots?.p50 ?? '–'}, p90 ≤${slots?.p90 ?? '–'}`,
  );
  text('analytics-step', v.series_minutes);
  barChart(
    $('analytics-series'),
    v.series.map((r) => ({ label: r.from.slice(11, 16), count: r.landing_rate === null ? 0 : Math.round(r.landing_rate * 100) })),
  );
  const rows = v.by_leader.map((l) => {
    const tr = document.createElement('tr');
    tr.dataset.leader = l.leader;
    for (const c of [l.leader, fmt(l.transactions), fmt(l.landed), pct(l.landing_rate), l.slots_to_land ? `≤${l.slots_to_land.p50}` : '–', l.slots_to_land ? `≤${l.slots_to_land.p90}` : '–']) {
      const td = document.createElement('td');
      td.textContent = String(c);
      tr.append(td);
    }
    return tr;
  });
  $('analytics-leaders').tBodies[0].replaceChildren(...rows);
}

function openStream() {
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/stream`;
  const ws = new WebSocket(url);
  bot.socket = ws;
  text('stream-state', 'connecting');
  // The key goes in the first message, not the URL.
  ws.onopen = () => ws.send(JSON.stringify({ type: 'auth', api_key: bot.key }));
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.type === 'ready') text('stream-state', 'live');
    else if (msg.type === 'status') onStatus(msg);
  };
  ws.onclose = (e) => {
    if (bot.socket !== ws) return;
    // A refused key is not retried: the account view says why.
    const retry = e.code !== STREAM_UNAUTHORIZED;
    text('stream-state', `closed (${e.code}${e.reason ? `: ${e.reason}` : ''})${retry ? '; reconnecting' : ''}`);
    if (retry) setTimeout(() => bot.socket === ws && openStream(), 2000);
  };
}

/**
 * GET /v1/transactions, once when the bot view opens: the account's recent transactions, under
 * what the stream has pushed meanwhile (a pushed record is newer than the page's copy, and carries
 * the tip and the slot at acceptance, which the page's records lack: their cells show –).
 */
async function loadHistory(key) {
  try {
    const page = await getJson(`/v1/transactions?limit=${HISTORY_ROWS}`, key);
    if (bot.key !== key) return; // another key since
    const merged = new Map();
    for (const r of [...page.transactions].reverse()) merged.set(r.signature, r); // oldest first: newest last
    for (const [sig, r] of bot.txs) {
      merged.delete(sig);
      merged.set(sig, r);
    }
    while (merged.size > MAX_ROWS) merged.delete(merged.keys().next().value);
    bot.txs = merged;
    renderTable();
    renderCharts();
  } catch (e) {
    showError('bot-error', e.message);
  }
}

function onStatus(record) {
  bot.txs.delete(record.signature);
  bot.txs.set(record.signature, record); // newest last
  while (bot.txs.size > MAX_ROWS) bot.txs.delete(bot.txs.keys().next().value);
  renderTable();
  renderCharts();
  // Settled, or expired (pushed again with its post-mortem): the trace shown is redrawn.
  if (bot.selected === record.signature && (record.status !== 'sent' || record.expired)) void showTrace(record.signature);
}

const stateOf = (r) => (r.expired ? 'expired' : r.status);
const slotsToLand = (r) => (r.status === 'confirmed' && r.slot !== null && r.submit_slot !== undefined ? r.slot - r.submit_slot : null);

function renderTable() {
  const rows = [...bot.txs.values()].reverse().map((r) => {
    const tr = document.createElement('tr');
    tr.dataset.signature = r.signature;
    if (r.signature === bot.selected) tr.className = 'selected';
    const cells = [r.signature, stateOf(r), r.latency_ms === null ? '–' : `${r.latency_ms} ms`, slotsToLand(r) ?? '–', fmt(r.tip_lamports)];
    cells.forEach((c, i) => {
      const td = document.createElement('td');
      td.textContent = String(c);
      if (i === 1) td.className = `status-${c}`;
      tr.append(td);
    });
    tr.onclick = () => void showTrace(r.signature);
    return tr;
  });
  $('tx-table').tBodies[0].replaceChildren(...rows);
}

function renderCharts() {
  const landed = [...bot.txs.values()].filter((r) => r.status === 'confirmed');
  const latencies = landed.map((r) => r.latency_ms);
  const slots = landed.map(slotsToLand).filter((n) => n !== null);
  barChart($('latency-hist'), bucketize(latencies, LATENCY_BOUNDS_MS));
  barChart($('slots-hist'), bucketize(slots, SLOT_BOUNDS));
  text('latency-summary', latencies.length ? `${latencies.length} landed; median ${median(latencies)} ms` : 'no landing seen yet in this tab');
  text('slots-summary', slots.length ? `median ${median(slots)} slots` : '');
  const tips = [...bot.txs.values()].map((r) => r.tip_lamports).filter((t) => t !== undefined);
  const w = bot.floor?.windows['10m'];
  const minimum = bot.floor?.plan_minimum?.min_tip_lamports ?? null;
  tipsChart($('tips-chart'), tips, [
    { label: 'floor p50', cls: 'floor', value: w?.lamports?.p50 ?? null },
    { label: 'floor p75', cls: 'floor', value: w?.lamports?.p75 ?? null },
    { label: 'plan min', cls: 'minimum', value: minimum },
  ]);
  const under = w?.lamports ? tips.filter((t) => t < w.lamports.p50).length : null;
  text('tips-summary', w?.lamports ? `10 min floor p50 ${fmt(w.lamports.p50)} lamports over ${w.landed} landings; ${under} of your ${tips.length} tips below it` : 'no landing in the last 10 minutes: no floor yet');
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
}

async function showTrace(signature) {
  bot.selected = signature;
  renderTable();
  try {
    const t = await getJson(`/v1/status/${signature}/trace`, bot.key);
    $('trace-card').hidden = false;
    text('trace-sig', signature);
    text('trace-cause', t.cause);
    text('trace-reached', t.leaders_reached);
    text('trace-tried', t.leaders_tried);
    text('trace-attempts', t.attempts.length + t.attempts_omitted);
    // Why it did not land (a transaction that expired): the post-mortem's sentence.
    $('trace-post-mortem').hidden = !t.post_mortem;
    text('trace-post-mortem', t.post_mortem ? `Why it did not land: ${t.post_mortem.summary}` : '');
    timeline($('trace-timeline'), t, bot.txs.get(signature)?.latency_ms ?? null);
    showError('bot-error', null);
  } catch (e) {
    showError('bot-error', e.message);
  }
}

function startBot(key) {
  stopBot();
  bot.key = key;
  sessionStorage.setItem(KEY_ITEM, key);
  openStream();
  // The history once the key is known good (a refused key is reported once, by the account).
  void refreshBot().then((ok) => ok && loadHistory(key));
  bot.timer = setInterval(refreshBot, ACCOUNT_REFRESH_MS);
}

function stopBot() {
  clearInterval(bot.timer);
  const ws = bot.socket;
  bot.socket = null;
  ws?.close();
  bot.txs.clear();
  bot.selected = null;
}

// ---- operator view ---------------------------------------------------------------------------

/** The samples of a Prometheus text exposition: { name, labels, value }. */
function parseMetrics(body) {
  const samples = [];
  for (const line of body.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

const matches = (s, name, labels) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v);
const total = (samples, name, labels = {}) => samples.filter((s) => matches(s, name, labels)).reduce((a, s) => a + s.value, 0);

/**
 * The bucket of a histogram (summed over its series) that holds its `q` quantile: `{ lo, hi }`,
 * the quantile being above `lo` and at most `hi` (`hi` Infinity past the last bound). Shown as
 * that range, not interpolated inside it as Prometheus's histogram_quantile does: a p99 of
 * 497.5 ms drawn between the 250 and 500 ms bounds when the real tail was ~380 ms read as a
 * measurement it was not.
 */
function quantileBucket(samples, name, q) {
  const byLe = new Map();
  for (const s of samples) if (s.name === `${name}_bucket`) byLe.set(s.labels.le, (byLe.get(s.labels.le) ?? 0) + s.value);
  const buckets = [...byLe].map(([le, n]) => [le === '+Inf' ? Infinity : Number(le), n]).sort((a, b) => a[0] - b[0]);
  const count = buckets.length ? buckets[buckets.length - 1][1] : 0;
  if (count === 0) return null;
  const rank = q * count;
  let lo = 0;
  for (const [le, n] of buckets) {
    if (n >= rank) return { lo, hi: le };
    lo = le;
  }
  return { lo, hi: Infinity };
}

/** A quantile's bucket as text: `250.0 ms–500.0 ms`, `> 60.00 s`, or `–` with no data. */
function range(b, unit) {
  if (b === null) return '–';
  if (b.hi === Infinity) return `> ${unit(b.lo)}`;
  return b.lo === 0 ? `≤ ${unit(b.hi)}` : `${unit(b.lo)}–${unit(b.hi)}`;
}

const quantileRange = (samples, name, q, unit = seconds) => range(quantileBucket(samples, name, q), unit);

/** How far back the operator's charts over time reach, and the most samples kept for it. */
const HISTORY_MS = 15 * 60 * 1000;
const MAX_SAMPLES = Math.ceil(HISTORY_MS / OPERATOR_REFRESH_MS) + 1;

/** `history`: the counters of each refresh, oldest first, for the last `HISTORY_MS` (this tab's; a reload starts it empty). */
const op = { token: null, timer: null, previous: null, history: [] };

/**
 * Keep this refresh's counters and draw the charts over time from the differences between
 * consecutive samples: sends/s (accepted), landing rate (confirmed of those settled in the
 * interval) and mean landing latency (the histogram's sum and count: exact, no bucket).
 */
function renderHistory(sample) {
  const h = op.history;
  h.push(sample);
  while (h.length > MAX_SAMPLES || (h.length > 0 && h[0].at < sample.at - HISTORY_MS)) h.shift();
  const sends = [], rate = [], latency = [];
  for (let i = 1; i < h.length; i++) {
    const [a, b] = [h[i - 1], h[i]];
    const dt = (b.at - a.at) / 1000;
    if (dt <= 0 || b.accepted < a.accepted) continue; // a restarted service: its counters began again
    sends.push({ at: b.at, value: (b.accepted - a.accepted) / dt });
    const settled = b.settled - a.settled;
    if (settled > 0) rate.push({ at: b.at, value: (100 * (b.confirmed - a.confirmed)) / settled });
    const landed = b.landingCount - a.landingCount;
    if (landed > 0) latency.push({ at: b.at, value: (1000 * (b.landingSum - a.landingSum)) / landed });
  }
  lineChart($('op-chart-sends'), sends, sample.at, (v) => fmt(v));
  lineChart($('op-chart-rate'), rate, sample.at, (v) => `${v.toFixed(0)} %`, 100);
  lineChart($('op-chart-latency'), latency, sample.at, (v) => `${v.toFixed(0)} ms`);
}

/**
 * A line over the last `HISTORY_MS` ending `now`: one dot per interval (titled with its value,
 * `data-value` for tests), the largest value written at the top left, the ends of the time axis
 * at the bottom corners (so no two labels ever meet).
 */
function lineChart(container, points, now, label, fixedMax) {
  const w = 320, h = 100, pad = 14;
  const max = fixedMax ?? Math.max(1e-9, ...points.map((p) => p.value));
  const x = (at) => pad + ((w - 2 * pad) * (at - (now - HISTORY_MS))) / HISTORY_MS;
  const y = (v) => h - pad - ((h - 2 * pad) * v) / max;
  const root = svgRoot(w, h);
  root.append(svgEl('line', { class: 'axis', x1: pad, y1: h - pad, x2: w - pad, y2: h - pad }));
  root.append(svgEl('text', { x: pad, y: 10 }, fixedMax !== undefined ? label(max) : points.length ? `max ${label(max)}` : 'no data yet'));
  root.append(svgEl('text', { x: pad, y: h - 2 }, '−15 min'));
  root.append(svgEl('text', { x: w - pad, y: h - 2, 'text-anchor': 'end' }, 'now'));
  if (points.length > 1) root.append(svgEl('polyline', { class: 'series', points: points.map((p) => `${x(p.at).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ') }));
  for (const p of points) {
    const dot = svgEl('circle', { class: 'sample', cx: x(p.at).toFixed(1), cy: y(p.value).toFixed(1), r: 2, 'data-value': p.value });
    dot.append(svgEl('title', {}, `${new Date(p.at).toISOString().slice(11, 19)}: ${label(p.value)}`));
    root.append(dot);
  }
  container.replaceChildren(root);
}

function renderOperator(samples, health, at) {
  const accepted = total(samples, 'landfall_plan_accepted_total');
  const prev = op.previous;
  text('op-sends-rate', prev ? fmt(Math.max(0, accepted - prev.accepted) / ((at - prev.at) / 1000)) : '–');
  op.previous = { accepted, at };
  text('op-accepted', fmt(accepted));
  const outcome = (o) => total(samples, 'landfall_transactions_total', { outcome: o });
  const [confirmed, failed, expired] = [outcome('confirmed'), outcome('failed'), outcome('expired')];
  text('op-confirmed', fmt(confirmed));
  text('op-failed', fmt(failed));
  text('op-expired', fmt(expired));
  const settled = confirmed + failed + expired;
  text('op-landing-rate', settled ? pct(confirmed / settled) : '–');
  renderHistory({
    at,
    accepted,
    confirmed,
    settled,
    landingSum: total(samples, 'landfall_landing_latency_seconds_sum'),
    landingCount: total(samples, 'landfall_landing_latency_seconds_count'),
  });
  text('op-latency-p50', quantileRange(samples, 'landfall_service_latency_seconds', 0.5));
  text('op-latency-p99', quantileRange(samples, 'landfall_service_latency_seconds', 0.99));
  text('op-latency-count', fmt(total(samples, 'landfall_service_latency_seconds_count')));
  text('op-landing-p50', quantileRange(samples, 'landfall_landing_latency_seconds', 0.5));
  text('op-landing-p99', quantileRange(samples, 'landfall_landing_latency_seconds', 0.99));
  text('op-slots-p50', quantileRange(samples, 'landfall_slots_to_land', 0.5, fmt));
  renderChain(samples, health);
  renderRefusals(samples);
  renderLeaders(samples);
  renderCluster(samples, health);
  const build = samples.find((s) => s.name === 'landfall_build_info');
  text('op-build', build ? `Landfall ${build.labels.version} on Node.js ${build.labels.node}` : '');
}

function renderChain(samples, health) {
  const synced = total(samples, 'landfall_chain_synced') === 1;
  text('op-chain-state', synced ? 'synced' : 'stale');
  $('op-chain-state').className = `big ${synced ? 'status-confirmed' : 'status-failed'}`;
  text('op-slot', fmt(total(samples, 'landfall_chain_slot')));
  text('op-slot-age', seconds(total(samples, 'landfall_chain_slot_age_seconds')));
  text('op-store', health.store ? (health.store.available ? 'available' : `unavailable: ${health.store.reason ?? ''}`) : health.status);
}

/** Non-2xx responses by status code (and 429s by budget), the largest first. */
function renderRefusals(samples) {
  const rows = new Map();
  for (const s of samples) {
    if (s.name !== 'landfall_http_requests_total' || Number(s.labels.code) < 400 || s.value === 0) continue;
    rows.set(`HTTP ${s.labels.code}`, (rows.get(`HTTP ${s.labels.code}`) ?? 0) + s.value);
  }
  for (const s of samples) {
    if (s.name !== 'landfall_rate_limited_total' || s.value === 0) continue;
    const k = `429 ${s.labels.budget} budget`;
    rows.set(k, (rows.get(k) ?? 0) + s.value);
  }
  fillTable('op-refusals', [...rows].sort((a, b) => b[1] - a[1]));
}

function renderLeaders(samples) {
  const leaders = new Map();
  for (const s of samples) {
    if (s.name !== 'landfall_leader_sends_total') continue;
    const l = leaders.get(s.labels.leader) ?? { ok: 0, failed: 0 };
    l[s.labels.result] = s.value;
    leaders.set(s.labels.leader, l);
  }
  const reached = [...leaders].filter(([name, l]) => name !== 'other' && l.ok > 0);
  text('op-leaders', reached.length);
  fillTable('op-leader-table', [...leaders].sort((a, b) => b[1].ok - a[1].ok).slice(0, 10).map(([name, l]) => [name, l.ok, l.failed]));
}

function renderCluster(samples, health) {
  const c = health.cluster;
  if (!c) {
    text('op-cluster', 'single node');
    text('op-cluster-detail', '');
    return;
  }
  text('op-cluster', `${c.nodes.length} nodes (${c.nodes.join(', ')}), NATS ${c.nats}, ${c.mode}`);
  const lag = quantileRange(samples, 'landfall_cluster_replication_lag_seconds', 0.99);
  text('op-cluster-detail', `this node ${c.node}; replication lag p99 ${lag}; ${c.replication_backlog} events not yet acknowledged; budgets ${c.budget}`);
}

function fillTable(id, rows) {
  $(id).tBodies[0].replaceChildren(
    ...rows.map((cells) => {
      const tr = document.createElement('tr');
      for (const c of cells) {
        const td = document.createElement('td');
        td.textContent = typeof c === 'number' ? fmt(c) : String(c);
        tr.append(td);
      }
      return tr;
    }),
  );
}

async function refreshOperator() {
  try {
    const headers = op.token ? { authorization: `Bearer ${op.token}` } : {};
    const r = await fetch('/metrics', { headers });
    if (r.status === 404) throw new Error('/metrics is not served here: this service has an admin listener (adminPort); open the dashboard on it');
    if (!r.ok) throw new Error(`/metrics: ${r.status} ${await errorText(r)}`);
    const samples = parseMetrics(await r.text());
    const health = await (await fetch('/health', { headers })).json();
    renderOperator(samples, health, Date.now());
    showError('op-error', null);
    $('op-body').hidden = false;
  } catch (e) {
    showError('op-error', e.message);
  }
}

function startOperator(token) {
  clearInterval(op.timer);
  op.token = token || null;
  op.previous = null;
  op.history = [];
  if (token) sessionStorage.setItem(TOKEN_ITEM, token);
  else sessionStorage.removeItem(TOKEN_ITEM);
  void refreshOperator();
  op.timer = setInterval(refreshOperator, OPERATOR_REFRESH_MS);
}

// ---- wiring ----------------------------------------------------------------------------------

function selectView(view) {
  for (const b of document.querySelectorAll('.tab')) b.setAttribute('aria-selected', String(b.dataset.view === view));
  for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== view;
  if (location.hash !== `#${view}`) history.replaceState(null, '', `#${view}`);
  if (view === 'operator' && op.timer === null) startOperator(sessionStorage.getItem(TOKEN_ITEM) ?? '');
}

function init() {
  for (const b of document.querySelectorAll('.tab')) b.onclick = () => selectView(b.dataset.view);
  $('bot-login').onsubmit = (e) => {
    e.preventDefault();
    const key = $('bot-key').value.trim();
    $('bot-key').value = '';
    if (key) startBot(key);
  };
  $('bot-forget').onclick = () => {
    stopBot();
    sessionStorage.removeItem(KEY_ITEM);
    $('bot-body').hidden = true;
  };
  $('analytics-window').onchange = () => {
    bot.window = $('analytics-window').value;
    if (bot.key) void refreshBot();
  };
  $('op-login').onsubmit = (e) => {
    e.preventDefault();
    startOperator($('op-token').value.trim());
    $('op-token').value = '';
  };
  const saved = sessionStorage.getItem(KEY_ITEM);
  if (saved) startBot(saved);
  const fromHash = () => selectView(location.hash === '#operator' ? 'operator' : 'bot');
  // Editing the address (#bot ↔ #operator), or going back, switches the view too.
  window.addEventListener('hashchange', fromHash);
  fromHash();
}

init();

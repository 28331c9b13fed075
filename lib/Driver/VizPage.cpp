//===- VizPage.cpp - the HTML, CSS and script of the uopc --viz page -------===//
// One self-contained page: the data (Viz.cpp) replaces the UOPC_DATA marker inside a JSON script element,
// the script draws it. Nothing is loaded: no src or href attribute, no fonts, no requests; the layout comes
// precomputed, the script only draws one pane at a time as SVG. test/viz/check_viz.py checks all of it in
// headless Chromium.
#include <string_view>

namespace uopc {

std::string_view vizPageTemplate() {
  static constexpr std::string_view page = R"uopcpage(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title><!--UOPC_TITLE--></title>
<style>
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; font: 13px system-ui, sans-serif; color: #1d2330; background: #f6f7f9; }
header { height: 40px; display: flex; align-items: center; gap: 10px; padding: 0 10px; background: #1d2330; color: #e8eaf0; }
header .title { font-weight: 600; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 40vw; }
header input { width: 260px; padding: 4px 6px; border-radius: 4px; border: 1px solid #556; font: 12px ui-monospace, monospace; }
header button, aside button, nav button { font: inherit; cursor: pointer; }
header button { padding: 3px 8px; border-radius: 4px; border: 1px solid #556; background: #2c3446; color: #e8eaf0; }
#count { font: 12px ui-monospace, monospace; color: #aab; min-width: 90px; }
#main { position: absolute; top: 40px; bottom: 0; left: 0; right: 0; display: flex; }
nav { width: 230px; overflow-y: auto; border-right: 1px solid #ccd; background: #fff; padding: 6px; }
nav h4 { margin: 10px 2px 4px; font-size: 11px; text-transform: uppercase; color: #667; }
nav button { display: block; width: 100%; text-align: left; margin: 2px 0; padding: 4px 6px; border: 1px solid transparent; border-radius: 4px; background: none; }
nav button:hover { background: #eef1f6; }
nav button.cur { background: #dfe7f7; border-color: #9bb2e0; }
nav button small { color: #667; }
nav button.same { color: #889; }
nav button .dot { display: inline-block; width: 8px; height: 8px; border-radius: 4px; background: #e8912d; margin-right: 4px; }
nav .fail { margin: 4px 2px; padding: 4px 6px; border-radius: 4px; background: #fde8e8; color: #9b1c1c; font-size: 12px; }
#view { flex: 1; position: relative; overflow: hidden; }
#crumb { position: absolute; top: 6px; left: 8px; right: 8px; z-index: 2; pointer-events: none; }
#crumb span, #crumb button { pointer-events: auto; background: rgba(255,255,255,.92); border: 1px solid #ccd; border-radius: 4px; padding: 2px 6px; font-size: 12px; }
#svg { width: 100%; height: 100%; display: block; cursor: grab; user-select: none; }
#msg { position: absolute; top: 40px; left: 16px; right: 16px; font: 12px ui-monospace, monospace; white-space: pre-wrap; }
aside { width: 380px; display: flex; flex-direction: column; border-left: 1px solid #ccd; background: #fff; }
#info { padding: 8px 10px; overflow-y: auto; max-height: 50%; border-bottom: 1px solid #ccd; }
#info h3 { margin: 2px 0 6px; font: 600 14px ui-monospace, monospace; }
#info table { border-collapse: collapse; width: 100%; }
#info td { vertical-align: top; padding: 2px 4px; font: 12px ui-monospace, monospace; word-break: break-all; }
#info td:first-child { color: #667; width: 60px; font-family: system-ui, sans-serif; }
#info .refs button { font: 11px ui-monospace, monospace; margin: 1px; padding: 1px 4px; border: 1px solid #ccd; border-radius: 3px; background: #f3f5f9; }
#info .badge { background: #e8912d; color: #fff; border-radius: 3px; padding: 0 4px; font-size: 11px; }
#info .open { margin: 6px 0; padding: 3px 8px; border: 1px solid #9bb2e0; border-radius: 4px; background: #dfe7f7; }
#srchead { padding: 6px 10px; font-size: 12px; color: #556; border-bottom: 1px solid #eee; }
#source { flex: 1; margin: 0; padding: 8px 10px; overflow: auto; font: 11px/1.35 ui-monospace, monospace; background: #fbfbfc; white-space: pre; }
svg text { font: 11px ui-monospace, monospace; fill: #1d2330; pointer-events: none; }
svg text.a { fill: #4a5468; }
.node rect { stroke: #7d8799; stroke-width: 1; fill: #fff; }
.node { cursor: pointer; }
.g-const rect { fill: #eef0f3; }
.g-buffer rect, .g-define rect { fill: #e3f1e6; }
.g-movement rect { fill: #eae3f5; }
.g-reduce rect { fill: #fbe3e3; }
.g-unary rect, .g-binary rect, .g-ternary rect { fill: #e2ecfa; }
.g-mem rect { fill: #f9f0d6; }
.g-control rect { fill: #f3e8de; }
.g-meta rect { fill: #e9edf1; }
.node.call rect { fill: #fff7e8; stroke: #b5832c; stroke-width: 2; }
.node.new rect { stroke: #e8740c; stroke-width: 2.5; }
.node.match rect { stroke: #d61f69; stroke-width: 3; }
.node.sel rect { stroke: #1f5fd6; stroke-width: 3.5; }
.edges path { fill: none; stroke: #a5adbb; stroke-width: 1; }
#hl path { fill: none; stroke-width: 2; }
#hl path.in { stroke: #1f5fd6; }
#hl path.out { stroke: #16a06a; }
</style>
</head>
<body>
<header>
  <span class="title" id="title"></span>
  <input id="q" placeholder="search: %12, 12, an op (ADD), a name" autocomplete="off">
  <span id="count"></span>
  <button id="fit" type="button">fit</button>
</header>
<div id="main">
  <nav id="nav"></nav>
  <div id="view">
    <div id="crumb"></div>
    <svg id="svg"><g id="vp"><g class="edges" id="edges"></g><g id="hl"></g><g id="nodes"></g></g></svg>
    <div id="msg"></div>
  </div>
  <aside><div id="info"></div><div id="srchead"></div><pre id="source"></pre></aside>
</div>
<script id="uopc-data" type="application/json">/*UOPC_DATA*/</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("uopc-data").textContent);
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const NH = 34;
// the view: which step, which region (the step's top level or one of its kernels), the selection
const V = { step: 0, region: -1, sel: -1, users: null, matches: [], mi: -1, tx: 0, ty: 0, s: 1, drawn: 0 };

function region() { return D.regions[V.region]; }
function newSet(step, r) { const l = D.steps[step].new[String(r)]; return new Set(l || []); }

function usersOf(R) {
  const u = R.nodes.map(() => []);
  R.nodes.forEach((n, i) => n[5].forEach((s) => u[s].push(i)));
  return u;
}

function drawNav() {
  let h = "<h4>passes</h4>";
  D.steps.forEach((st, i) => {
    const sub = i === 0 ? st.nodes + " nodes" : st.changed ? st.nodes + " nodes, " + st.newCount + " new" : "unchanged";
    h += '<button type="button" class="step' + (i === V.step ? " cur" : "") + (st.changed ? "" : " same") + '" data-step="' + i + '">' +
      String(i).padStart(2, "0") + " " + esc(st.name) + "<br><small>" + sub + "</small></button>";
  });
  if (D.info.failure) h += '<div class="fail">the next pass failed: ' + esc(D.info.failure) + "</div>";
  const st = D.steps[V.step];
  if (st.kernels.length) {
    h += "<h4>kernels (" + st.kernels.length + ")</h4>";
    h += '<button type="button" class="region' + (V.region === st.top ? " cur" : "") + '" data-region="' + st.top + '">top level<br><small>' +
      D.regions[st.top].count + " nodes</small></button>";
    st.kernels.forEach((r) => {
      const R = D.regions[r], isNew = st.new[String(r)];
      h += '<button type="button" class="region' + (V.region === r ? " cur" : "") + '" data-region="' + r + '">' +
        (isNew ? '<span class="dot"></span>' : "") + "@" + esc(R.name) + "<br><small>" + R.count + " nodes</small></button>";
    });
  }
  $("nav").innerHTML = h;
}

function edgePath(x1, y1, x2, y2) {
  const dy = Math.max(20, (y2 - y1) / 2);
  return "M" + x1 + " " + y1 + "C" + x1 + " " + (y1 + dy) + " " + x2 + " " + (y2 - dy) + " " + x2 + " " + y2;
}

function drawRegion() {
  const R = region(), st = D.steps[V.step];
  V.sel = -1; V.matches = []; V.mi = -1;
  $("count").textContent = "";
  let crumb = "<span>" + String(V.step).padStart(2, "0") + " " + esc(st.name) + (st.changed ? "" : " (unchanged)") + "</span> ";
  if (R.kernel) crumb += '<button type="button" id="back">top level</button> <span>kernel @' + esc(R.name) + "</span>";
  $("crumb").innerHTML = crumb;
  if ($("back")) $("back").onclick = () => openRegion(st.top);
  drawSource();
  if (R.big) {
    $("edges").innerHTML = ""; $("nodes").innerHTML = ""; $("hl").innerHTML = "";
    let m = R.count + " nodes: above the " + D.info.maxRegionNodes + " this page draws. Ops:\n";
    for (const k in R.ops) m += "  " + k + " " + R.ops[k] + "\n";
    $("msg").textContent = m;
    V.drawn = 0; V.users = null;
    info(-1);
    return;
  }
  $("msg").textContent = "";
  const xy = R.xy, news = newSet(V.step, V.region);
  let e = "", n = "";
  R.nodes.forEach((nd, i) => {
    const x = xy[3 * i], y = xy[3 * i + 1], w = xy[3 * i + 2];
    for (const s of nd[5]) e += edgePath(xy[3 * s], xy[3 * s + 1] + NH / 2, x, y - NH / 2);
    const cls = "node g-" + (D.groups[nd[0]] || "meta") + (nd[7] >= 0 ? " call" : "") + (news.has(i) ? " new" : "");
    n += '<g class="' + cls + '" data-i="' + i + '" transform="translate(' + (x - w / 2) + "," + (y - NH / 2) + ')"><rect width="' + w +
      '" height="' + NH + '" rx="4"/><text x="6" y="14">' + esc(nd[0]) + " %" + i + '</text><text class="a" x="6" y="28">' + esc(nd[6]) + "</text></g>";
  });
  $("edges").innerHTML = '<path d="' + e + '"/>'; // one element for all edges: thousands of paths draw slowly
  $("nodes").innerHTML = n;
  $("hl").innerHTML = "";
  V.users = usersOf(R);
  V.drawn = R.nodes.length;
  fit(true);
  info(-1);
}

function drawSource() {
  const R = region();
  let code = null;
  if (R.kernel && R.source !== undefined) code = D.sources[R.source];
  if (code) {
    $("srchead").textContent = "@" + R.name + ": " + D.info.language + " for " + code.device +
      (R.sourceIsLater ? " (the source of the final kernel of this name: later passes change this kernel)" : "");
    $("source").textContent = code.text;
  } else if (R.kernel) {
    $("srchead").textContent = "@" + R.name + ": no source" + (D.info.note ? " (" + D.info.note + ")" : "");
    $("source").textContent = "";
  } else {
    $("srchead").textContent = D.info.note ? "kernel sources: " + D.info.note : "open a kernel to see its " + D.info.language + " source";
    $("source").textContent = "";
  }
}

function applyTransform() { $("vp").setAttribute("transform", "translate(" + V.tx + "," + V.ty + ") scale(" + V.s + ")"); }

function fit(initial) {
  const R = region(), box = $("svg").getBoundingClientRect();
  if (!R.W || !box.width) return;
  let s = Math.min(box.width / R.W, (box.height - 30) / R.H, 1.5);
  if (initial && s < 0.35) {
    // too small to read: show the bottom of the graph (its root) at a readable scale
    s = 0.8;
    const last = R.nodes.length - 1;
    V.s = s; V.tx = box.width / 2 - R.xy[3 * last] * s; V.ty = box.height - 40 - R.xy[3 * last + 1] * s;
  } else {
    V.s = s; V.tx = (box.width - R.W * s) / 2; V.ty = 30 + (box.height - 30 - R.H * s) / 2;
  }
  applyTransform();
}

function center(i) {
  const R = region(), box = $("svg").getBoundingClientRect();
  if (V.s < 0.6) V.s = 0.9;
  V.tx = box.width / 2 - R.xy[3 * i] * V.s; V.ty = box.height / 2 - R.xy[3 * i + 1] * V.s;
  applyTransform();
}

function nodeEl(i) { return $("nodes").children[i]; }

function select(i, doCenter) {
  const R = region();
  if (V.sel >= 0 && nodeEl(V.sel)) nodeEl(V.sel).classList.remove("sel");
  V.sel = i;
  let hl = "";
  if (i >= 0) {
    nodeEl(i).classList.add("sel");
    const xy = R.xy;
    for (const s of R.nodes[i][5]) hl += '<path class="in" d="' + edgePath(xy[3 * s], xy[3 * s + 1] + NH / 2, xy[3 * i], xy[3 * i + 1] - NH / 2) + '"/>';
    for (const u of V.users[i]) hl += '<path class="out" d="' + edgePath(xy[3 * i], xy[3 * i + 1] + NH / 2, xy[3 * u], xy[3 * u + 1] - NH / 2) + '"/>';
    if (doCenter) center(i);
  }
  $("hl").innerHTML = hl;
  info(i);
}

function refButtons(list) {
  const R = region();
  return list.map((s) => '<button type="button" data-goto="' + s + '">%' + s + " " + esc(R.nodes[s][0]) + "</button>").join("");
}

function info(i) {
  const R = region(), st = D.steps[V.step];
  if (i < 0) {
    let h = "<h3>" + (R.kernel ? "kernel @" + esc(R.name) : esc(st.name)) + "</h3><table>";
    h += "<tr><td>input</td><td>" + esc(D.info.input) + "</td></tr><tr><td>target</td><td>" + esc(D.info.target) + "</td></tr>";
    h += "<tr><td>nodes</td><td>" + R.count + (R.kernel ? "" : " (" + st.nodes + " with the kernels)") + "</td></tr>";
    const nn = newSet(V.step, V.region).size;
    if (V.step > 0) h += "<tr><td>changed</td><td>" + (st.changed ? nn + " nodes new in this pass (orange)" : "this pass left the graph unchanged") + "</td></tr>";
    h += "</table><p>Click a node for its op, dtype, arg, shape, device and sources; drag to pan, wheel to zoom.</p>";
    $("info").innerHTML = h;
    return;
  }
  const n = R.nodes[i], news = newSet(V.step, V.region);
  let h = "<h3>%" + i + " " + esc(n[0]) + (news.has(i) ? ' <span class="badge">new in this pass</span>' : "") + "</h3><table>";
  const row = (k, v) => { if (v !== "" && v !== undefined) h += "<tr><td>" + k + "</td><td>" + esc(v) + "</td></tr>"; };
  row("op", n[0]); row("dtype", n[1]); row("arg", n[2]); row("shape", n[3]); row("device", n[4]); row("tag", n[8]);
  h += '<tr><td>sources</td><td class="refs">' + (n[5].length ? refButtons(n[5]) : "none") + "</td></tr>";
  h += '<tr><td>users</td><td class="refs">' + (V.users[i].length ? refButtons(V.users[i]) : "none (the root)") + "</td></tr></table>";
  if (n[7] >= 0) h += '<button type="button" class="open" data-region="' + n[7] + '">open kernel ' + esc(n[6]) + " (" + D.regions[n[7]].count + " nodes)</button>";
  if (R.kernel && i === R.nodes.length - 1) h += "<p>The kernel's SINK: its " + esc(D.info.language) + " source is beside, below.</p>";
  $("info").innerHTML = h;
}

function openRegion(r) { V.region = r; drawNav(); drawRegion(); }
function openStep(s) {
  const st = D.steps[s], R = region();
  let r = st.top;
  if (R && R.kernel) { // stay in the kernel of the same name, if this step has one
    for (const k of st.kernels) if (D.regions[k].name === R.name) r = k;
  }
  V.step = s; V.region = r; drawNav(); drawRegion();
}

function search(next) {
  const R = region(), q = $("q").value.trim();
  document.querySelectorAll("#nodes .match").forEach((el) => el.classList.remove("match"));
  if (!q || R.big) { V.matches = []; $("count").textContent = ""; return; }
  let m = [];
  const id = /^%?(\d+)$/.exec(q);
  if (id) { const i = +id[1]; if (i < R.nodes.length) m = [i]; }
  else {
    const t = q.toLowerCase();
    R.nodes.forEach((n, i) => { if (n[0].toLowerCase() === t) m.push(i); });
    if (!m.length) R.nodes.forEach((n, i) => { if ((n[0] + " " + n[2] + " " + n[6] + " " + n[3]).toLowerCase().includes(t)) m.push(i); });
  }
  if (String(m) !== String(V.matches)) { V.matches = m; V.mi = -1; }
  for (const i of m) nodeEl(i).classList.add("match");
  if (next && m.length) { V.mi = (V.mi + 1) % m.length; select(m[V.mi], true); }
  $("count").textContent = m.length ? (V.mi >= 0 ? V.mi + 1 + "/" : "") + m.length + " match" + (m.length > 1 ? "es" : "") : "no match";
}

// events
$("nav").addEventListener("click", (ev) => {
  const b = ev.target.closest("button");
  if (!b) return;
  if (b.dataset.step !== undefined) openStep(+b.dataset.step);
  else if (b.dataset.region !== undefined) openRegion(+b.dataset.region);
});
$("info").addEventListener("click", (ev) => {
  const b = ev.target.closest("button");
  if (!b) return;
  if (b.dataset.goto !== undefined) select(+b.dataset.goto, true);
  else if (b.dataset.region !== undefined) openRegion(+b.dataset.region);
});
$("nodes").addEventListener("click", (ev) => {
  const g = ev.target.closest(".node");
  if (g) select(+g.dataset.i, false);
});
$("nodes").addEventListener("dblclick", (ev) => {
  const g = ev.target.closest(".node");
  if (!g) return;
  const c = region().nodes[+g.dataset.i][7];
  if (c >= 0) openRegion(c);
});
$("q").addEventListener("input", () => search(false));
$("q").addEventListener("keydown", (ev) => { if (ev.key === "Enter") search(true); });
$("fit").addEventListener("click", () => fit(false));
const svg = $("svg");
let drag = null;
svg.addEventListener("mousedown", (ev) => { if (!ev.target.closest(".node")) drag = { x: ev.clientX, y: ev.clientY, tx: V.tx, ty: V.ty }; });
window.addEventListener("mousemove", (ev) => { if (drag) { V.tx = drag.tx + ev.clientX - drag.x; V.ty = drag.ty + ev.clientY - drag.y; applyTransform(); } });
window.addEventListener("mouseup", () => { drag = null; });
svg.addEventListener("wheel", (ev) => {
  ev.preventDefault();
  const box = svg.getBoundingClientRect(), px = ev.clientX - box.left, py = ev.clientY - box.top;
  const k = Math.exp(-ev.deltaY * 0.0015), s = Math.min(4, Math.max(0.02, V.s * k));
  V.tx = px - (px - V.tx) * s / V.s; V.ty = py - (py - V.ty) * s / V.s; V.s = s;
  applyTransform();
}, { passive: false });
window.addEventListener("resize", () => fit(false));

$("title").textContent = "uopc viz: " + D.info.input + " (" + D.info.target + ", " + D.steps.length + " graphs)";
// #step=N opens step N (a name works too): links between people, never a request
const hs = /step=([^&]+)/.exec(location.hash);
let first = 0;
if (hs) D.steps.forEach((s, i) => { if (String(i) === hs[1] || s.name === decodeURIComponent(hs[1])) first = i; });
V.region = D.steps[first].top;
openStep(first);
// for tests and scripts: what is on screen
window.uopcViz = { data: D, view: V, openStep, openRegion, ready: true, readyAt: performance.now() };
document.body.setAttribute("data-ready", "1");
</script>
</body>
</html>
)uopcpage";
  return page;
}

} // namespace uopc

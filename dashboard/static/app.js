// The Muster fleet dashboard: polls the feed beside this page and renders
// every live server. Text from the feed is only ever set as textContent.
"use strict";

const REFRESH_MS = 1000;
const DASH = "–";
const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "text") e.textContent = v;
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function stat(node, name) {
  const s = node.stats || {};
  return Object.prototype.hasOwnProperty.call(s, name) ? s[name] : null;
}

function queues(node) {
  return Object.entries(node.stats || {})
    .filter(([k]) => k.startsWith("queue:"))
    .map(([k, v]) => [k.slice(6), v])
    .sort((a, b) => a[0].localeCompare(b[0]));
}

function level(frac) {
  return frac >= 0.9 ? "hot" : frac >= 0.7 ? "warn" : "ok";
}

function loadBar(node) {
  const frac = node.max_load > 0 ? Math.min(1, node.load / node.max_load) : 0;
  const fill = el("div", { class: "fill", "data-level": level(frac) });
  fill.style.width = (frac * 100).toFixed(1) + "%";
  return el("div", { class: "bar" },
    el("div", { class: "track", role: "meter", "aria-valuemin": "0", "aria-valuemax": String(node.max_load), "aria-valuenow": String(node.load) }, fill),
    loadText(node));
}

// loadText is the load as the server published it: a load published in
// steps (load_step) is marked "~", with the step in its title, never shown
// as if it were the exact load.
function loadText(node) {
  if (!node.load_step) return el("span", { class: "text", text: `${node.load} / ${node.max_load}` });
  return el("span", {
    class: "text", text: `~${node.load} / ${node.max_load}`,
    title: `published in steps of ${node.load_step} (muster.server.capacity.load-step): the exact load, on the server's /muster/server/capacity, is less than a step from it`,
  });
}

function row(node, self) {
  const qs = queues(node);
  const qcell = el("td", { class: "queues" });
  if (qs.length === 0) qcell.textContent = DASH;
  for (const [name, n] of qs) qcell.append(el("span", { class: "chip" }, name + " ", el("b", { text: String(n) })));
  const rooms = stat(node, "rooms"), players = stat(node, "players");
  return el("tr", { "data-node": node.id, "data-state": node.state },
    el("td", {}, el("span", { class: "pill", "data-state": node.state, text: node.state })),
    el("td", {}, el("span", { class: "id", text: node.id }), node.id === self ? el("span", { class: "self", text: "this server" }) : null),
    el("td", { class: "region", text: node.region || DASH }),
    el("td", {}, loadBar(node)),
    qcell,
    el("td", { class: "num rooms", text: rooms == null ? DASH : String(rooms) }),
    el("td", { class: "num players", text: players == null ? DASH : String(players) }));
}

function sum(nodes, fn) {
  let total = 0, seen = false;
  for (const n of nodes) {
    const v = fn(n);
    if (v != null) { total += v; seen = true; }
  }
  return seen ? total : null;
}

function render(snap) {
  const nodes = snap.nodes.slice().sort((a, b) =>
    (a.region || "").localeCompare(b.region || "") || a.id.localeCompare(b.id));
  const tbody = $("nodes");
  tbody.replaceChildren(...nodes.map((n) => row(n, snap.self)));
  if (nodes.length === 0) tbody.append(el("tr", { class: "empty" }, el("td", { colspan: "7", text: "no live server" })));

  const clusters = [...new Set(nodes.map((n) => n.cluster).filter(Boolean))];
  $("cluster").textContent = clusters.length ? "· " + clusters.join(", ") : "";
  $("self").textContent = snap.self;
  const foreign = snap.foreign || [];
  $("split").hidden = foreign.length === 0;
  $("split").textContent = foreign.length === 0 ? "" :
    `Split fleet: ${foreign.length} server${foreign.length === 1 ? "" : "s"} of this cluster sign${foreign.length === 1 ? "s" : ""} ` +
    `with another muster.security.key (MUSTER__SECURITY__KEY) than this one and ${foreign.length === 1 ? "is" : "are"} not shown: ${foreign.join(", ")}`;
  $("sum-servers").textContent = String(nodes.length);
  const load = sum(nodes, (n) => n.load), max = sum(nodes, (n) => n.max_load);
  $("sum-load").replaceChildren(`${load ?? 0} / ${max ?? 0}`,
    max ? el("span", { class: "pct", text: ` ${Math.round(100 * load / max)}%` }) : "");
  const rooms = sum(nodes, (n) => stat(n, "rooms")), players = sum(nodes, (n) => stat(n, "players"));
  $("sum-rooms").textContent = rooms == null ? DASH : String(rooms);
  $("sum-players").textContent = players == null ? DASH : String(players);
  $("sum-queued").textContent = String(sum(nodes, (n) => queues(n).reduce((t, [, v]) => t + v, 0)) ?? 0);
  document.title = `Muster fleet · ${nodes.length} server${nodes.length === 1 ? "" : "s"}`;
}

function status(live, text) {
  const s = $("status");
  s.dataset.live = String(live);
  s.textContent = text;
  document.body.classList.toggle("stale", !live);
}

async function poll() {
  try {
    const res = await fetch("dashboard/nodes", { cache: "no-store" });
    if (!res.ok) throw new Error(res.status + " " + res.statusText);
    const snap = await res.json();
    render(snap);
    status(true, "live · " + new Date(snap.time).toLocaleTimeString());
  } catch (err) {
    status(false, "unreachable, retrying (" + err.message + ")");
  }
  setTimeout(poll, REFRESH_MS);
}

poll();

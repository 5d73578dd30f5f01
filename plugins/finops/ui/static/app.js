/* FinOps view: fetches the JSON API of this app and renders tables and Chart.js charts.
   Every value from the server is inserted with textContent (never innerHTML). */
"use strict";

const COLORS = ["#017cee", "#f39c12", "#27ae60", "#8e44ad", "#e74c3c", "#16a085", "#d35400",
                "#2c3e50", "#c0392b", "#7f8c8d", "#1abc9c", "#9b59b6"];
const charts = {};

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? "" : String(c)));
  return e;
}

async function api(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const res = await fetch("api/" + path + (q.toString() ? "?" + q : ""), {credentials: "same-origin",
                                                                          headers: {Accept: "application/json"}});
  if (!res.ok) {
    let detail = res.statusText;
    try { const j = await res.json(); detail = typeof j.detail === "string" ? j.detail : JSON.stringify(j.detail); } catch (e) { /* not JSON */ }
    throw new Error(res.status + " " + detail);
  }
  return res.json();
}

function fmtMoney(v, cur) {
  if (v === null || v === undefined) return "";
  const n = Number(v);
  try { return new Intl.NumberFormat(undefined, {style: "currency", currency: cur || "USD", maximumFractionDigits: 2}).format(n); }
  catch (e) { return n.toFixed(2) + (cur ? " " + cur : ""); }
}
const fmtNum = (v, d) => (v === null || v === undefined) ? "" : Number(v).toLocaleString(undefined, {maximumFractionDigits: d ?? 2});
const fmtPct = (v) => (v === null || v === undefined) ? "" : (Number(v) * 100).toFixed(1) + " %";

function showEmpty(box, message) {
  box.replaceChildren(el("p", {class: "empty"}, message));
}
function showError(box, err) {
  box.replaceChildren(el("p", {class: "error"}, "Could not load: " + err.message));
}

/* A table: cols = [{key, label, num, fmt(row)}]; page info from a paged response. */
function renderTable(box, cols, data, opts) {
  opts = opts || {};
  if (!data.items || data.items.length === 0) { showEmpty(box, data.reason || opts.emptyText || "Nothing here yet."); return; }
  const head = el("tr", {}, ...cols.map(c => el("th", {class: c.num ? "num" : ""}, c.label)));
  const body = data.items.map(row => {
    const tr = el("tr", {}, ...cols.map(c => {
      const v = c.fmt ? c.fmt(row) : row[c.key];
      return el("td", {class: c.num ? "num" : ""}, v instanceof Node ? v : (v == null ? "" : String(v)));
    }));
    if (opts.onRow) { tr.style.cursor = "pointer"; tr.addEventListener("click", () => { box.querySelectorAll("tr.selected").forEach(t => t.classList.remove("selected")); tr.classList.add("selected"); opts.onRow(row); }); }
    return tr;
  });
  const parts = [el("table", {}, el("thead", {}, head), el("tbody", {}, ...body))];
  if (data.total !== undefined && opts.onPage) {
    const pages = Math.max(1, Math.ceil(data.total / data.page_size));
    const pager = el("div", {class: "pager"},
      el("button", {type: "button", onclick: () => opts.onPage(data.page - 1)}, "‹"),
      `page ${data.page} of ${pages} · ${data.total} rows`,
      el("button", {type: "button", onclick: () => opts.onPage(data.page + 1)}, "›"));
    pager.children[0].disabled = data.page <= 1;
    pager.children[1].disabled = data.page >= pages;
    parts.push(pager);
  }
  box.replaceChildren(...parts);
}

function drawChart(id, config) {
  if (charts[id]) charts[id].destroy();
  const canvas = document.getElementById(id);
  config.options = Object.assign({responsive: true, maintainAspectRatio: false, animation: false,
    plugins: {legend: {position: "bottom", labels: {boxWidth: 12}}}}, config.options || {});
  charts[id] = new Chart(canvas, config);
  canvas.closest("figure").dataset.rendered = "true";
  return charts[id];
}

/* -- cost over time ------------------------------------------------------------------------ */
async function loadCost() {
  const form = document.getElementById("cost-form");
  const params = Object.fromEntries(new FormData(form).entries());
  for (const fig of document.querySelectorAll("#cost figure[data-dim]")) {
    const dim = fig.dataset.dim, canvasId = "chart-" + dim, empty = fig.querySelector(".empty");
    try {
      const data = await api("cost", Object.assign({dim}, params));
      if (!form.start.value && data.start) { form.start.value = data.start; form.end.value = data.end; }
      if (data.empty) {
        if (charts[canvasId]) { charts[canvasId].destroy(); delete charts[canvasId]; }
        fig.querySelector(".chart-box").hidden = true; empty.hidden = false; empty.textContent = data.reason;
        fig.dataset.rendered = "empty"; continue;
      }
      fig.querySelector(".chart-box").hidden = false; empty.hidden = true;
      fig.querySelector(".total").textContent = "total " + fmtMoney(data.total, data.currency) +
        (data.currencies.length > 1 ? " (other currencies: " + data.currencies.filter(c => c !== data.currency).join(", ") + ")" : "");
      drawChart(canvasId, {type: "bar", data: {labels: data.labels, datasets: data.series.map((s, i) => ({
          label: s.name, data: s.values, backgroundColor: COLORS[i % COLORS.length], stack: "cost"}))},
        options: {scales: {x: {stacked: true, ticks: {maxTicksLimit: 12}}, y: {stacked: true,
          ticks: {callback: v => fmtMoney(v, data.currency)}}},
          plugins: {legend: {position: "bottom", labels: {boxWidth: 12}}, tooltip: {callbacks: {
            label: ctx => ctx.dataset.label + ": " + fmtMoney(ctx.parsed.y, data.currency)}}}}});
    } catch (err) { empty.hidden = false; empty.textContent = "Could not load: " + err.message; fig.dataset.rendered = "error"; }
  }
}

/* -- showback + drill-down ----------------------------------------------------------------- */
let showbackState = {period: null, view: "amortised"};
async function loadShowback(page) {
  const box = document.getElementById("showback-table");
  try {
    const data = await api("showback", {period: showbackState.period, view: showbackState.view, page: page || 1, page_size: 15});
    const sel = document.getElementById("showback-period");
    if (data.periods && sel.options.length !== data.periods.length) {
      sel.replaceChildren(...data.periods.map(p => el("option", {value: p}, p)));
    }
    if (data.period) { sel.value = data.period; showbackState.period = data.period; }
    const m = k => r => fmtMoney(r[k], r.currency);
    renderTable(box, [
      {key: "team", label: "Team", fmt: r => el("button", {type: "button", class: "link"}, r.team)},
      {key: "cost_centre", label: "Cost centre"},
      {label: "Direct", num: true, fmt: m("direct_cost")}, {label: "Shared", num: true, fmt: m("shared_cost")},
      {label: "GPU", num: true, fmt: m("gpu_cost")}, {label: "Storage", num: true, fmt: m("storage_cost")},
      {label: "Egress", num: true, fmt: m("egress_cost")}, {label: "Total", num: true, fmt: m("total_cost")},
    ], data, {onPage: loadShowback, onRow: r => drill(r.team, 1), emptyText: "No showback yet."});
  } catch (err) { showError(box, err); }
}
async function drill(team) {
  document.getElementById("showback-drill").hidden = false;
  document.getElementById("drill-team").textContent = team + " · " + showbackState.period;
  const q = {period: showbackState.period, team, view: showbackState.view, page_size: 10};
  const bd = document.getElementById("drill-breakdown"), rs = document.getElementById("drill-resources");
  const loadBd = async (page) => { try { renderTable(bd, [
      {key: "provider", label: "Provider"}, {key: "sub_account_id", label: "Account"},
      {key: "service_name", label: "Service"}, {key: "allocation", label: "How"},
      {label: "Cost", num: true, fmt: r => fmtMoney(r.cost, r.currency)}],
      await api("showback/team", Object.assign({page}, q)), {onPage: loadBd}); } catch (e) { showError(bd, e); } };
  const loadRs = async (page) => { try { renderTable(rs, [
      {key: "provider", label: "Provider"}, {key: "resource_id", label: "Resource"},
      {key: "service_name", label: "Service"},
      {label: "Cost", num: true, fmt: r => fmtMoney(r.cost, r.currency)}],
      await api("showback/resources", Object.assign({page}, q)), {onPage: loadRs, emptyText: "No resources tagged with this team."}); } catch (e) { showError(rs, e); } };
  await Promise.all([loadBd(1), loadRs(1)]);
}

/* -- anomalies, policy actions, tag compliance --------------------------------------------- */
async function loadAnomalies(page) {
  const box = document.getElementById("anomalies-table");
  try {
    renderTable(box, [
      {label: "Monitor", fmt: r => r.monitor_type + ": " + r.monitor_key},
      {label: "Severity", fmt: r => el("span", {class: "pill sev-" + r.severity}, r.severity)},
      {key: "status", label: "Status"},
      {label: "Days", fmt: r => r.start_day + " → " + r.last_day},
      {label: "Actual", num: true, fmt: r => fmtMoney(r.actual, r.currency)},
      {label: "Expected", num: true, fmt: r => fmtMoney(r.expected, r.currency)},
      {label: "Impact", num: true, fmt: r => fmtMoney(r.total_impact, r.currency)},
      {label: "Top contributors", fmt: r => el("ul", {}, ...(r.contributors || []).slice(0, 5).map(c =>
          el("li", {}, c.key + " +" + fmtMoney(c.delta, r.currency) + " (" + fmtPct(c.share) + ")")))},
      {label: "Feedback", fmt: r => feedbackCell(r)},  /* plan.js */
    ], await loadFeedbackSummary().then(() => api("anomalies", {page: page || 1, page_size: 10})), {onPage: loadAnomalies, emptyText: "No anomalies detected."});
  } catch (err) { showError(box, err); }
}

async function loadPolicies(page) {
  const box = document.getElementById("policies-table");
  try {
    renderTable(box, [
      {key: "created_at", label: "When"}, {key: "policy", label: "Policy"}, {key: "provider", label: "Provider"},
      {label: "Resource", fmt: r => r.resource_name ? r.resource_id + " (" + r.resource_name + ")" : r.resource_id},
      {key: "decision", label: "Decision"}, {key: "action", label: "Action"}, {key: "result", label: "Result"},
      {label: "Dry run", fmt: r => r.dry_run ? "yes" : "no"}, {key: "reason", label: "Reason"},
    ], await api("policy-actions", {page: page || 1, page_size: 15}), {onPage: loadPolicies, emptyText: "No policy actions recorded."});
  } catch (err) { showError(box, err); }
}

async function loadTags(page) {
  const box = document.getElementById("tags-table"), sum = document.getElementById("tags-summary");
  try {
    const data = await api("tag-compliance", {page: page || 1, page_size: 15});
    if (data.empty && !data.summary) { sum.replaceChildren(); showEmpty(box, data.reason); return; }
    const costs = Object.entries(data.non_compliant_cost || {}).map(([c, v]) => fmtMoney(v, c)).join(" + ") || fmtMoney(0);
    sum.replaceChildren(el("div", {class: "cards"},
      el("div", {class: "card"}, el("span", {class: "muted"}, "Snapshot"), el("b", {}, data.snapshot_date)),
      el("div", {class: "card"}, el("span", {class: "muted"}, `Cost of non-compliant resources (${data.billing_period})`), el("b", {id: "tags-cost"}, costs)),
      ...data.summary.map(g => el("div", {class: "card"}, el("span", {class: "muted"}, g.policy + " · " + g.provider),
        el("b", {}, `${g.non_compliant} / ${g.resources} non-compliant`)))));
    renderTable(box, [
      {key: "provider", label: "Provider"}, {key: "account", label: "Account"}, {key: "resource_id", label: "Resource"},
      {key: "team", label: "Team"}, {label: "Missing tags", fmt: r => (r.missing_tags || []).join(", ")},
      {label: "Invalid tags", fmt: r => Array.isArray(r.invalid_tags) ? r.invalid_tags.join(", ") : (r.invalid_tags ? JSON.stringify(r.invalid_tags) : "")},
      {label: "Cost", num: true, fmt: r => fmtMoney(r.cost, r.currency)},
    ], data, {onPage: loadTags, emptyText: "Every resource is compliant."});
  } catch (err) { showError(box, err); }
}

/* -- GPU ----------------------------------------------------------------------------------- */
async function loadGpu() {
  const box = document.getElementById("gpu-table"), fig = document.querySelector("#gpu figure");
  try {
    const data = await api("gpu/price-performance");
    if (data.empty) { fig.querySelector(".chart-box").hidden = true; const e = fig.querySelector(".empty"); e.hidden = false; e.textContent = data.reason; fig.dataset.rendered = "empty"; showEmpty(box, "No price-performance figures yet."); return; }
    const labels = data.items.map(r => `${r.instance_type} ${r.region} (${r.pricing_model})`);
    drawChart("chart-gpu", {type: "bar", data: {labels, datasets: data.dtypes.map((d, i) => ({label: d,
        data: data.items.map(r => r.usd_per_tflop_hour[d] ?? null), backgroundColor: COLORS[i % COLORS.length]}))},
      options: {scales: {y: {title: {display: true, text: "$ / TFLOP-hour"}}}}});
    renderTable(box, [
      {key: "provider", label: "Provider"}, {key: "instance_type", label: "Instance"}, {key: "region", label: "Region"},
      {key: "gpu_model", label: "GPU"}, {key: "gpu_count", label: "GPUs", num: true}, {key: "pricing_model", label: "Pricing"},
      {label: "$/h", num: true, fmt: r => fmtMoney(r.price_per_hour, r.currency)},
      ...data.dtypes.map(d => ({label: "$/TFLOP-h " + d, num: true, fmt: r => r.usd_per_tflop_hour[d] == null ? "" : fmtNum(r.usd_per_tflop_hour[d], 4)})),
      {label: "$/1k steps", fmt: r => Object.entries(r.usd_per_1k_steps || {}).map(([k, v]) => k + " " + fmtNum(v, 4)).join(", ")},
      {label: "AMP saving", fmt: r => Object.entries(r.amp_saving || {}).map(([k, v]) => k + " " + fmtPct(v)).join(", ")},
      {label: "Spot saving", num: true, fmt: r => fmtPct(r.spot_saving)},
    ], data);
  } catch (err) { showError(box, err); }
}

async function loadDrift() {
  const box = document.getElementById("drift-table");
  try {
    renderTable(box, [
      {key: "provider", label: "Provider"}, {key: "instance_type", label: "Instance type"},
      {key: "gpu_name", label: "GPU as the API names it"}, {key: "gpu_count", label: "GPUs", num: true},
      {key: "source", label: "Source"}, {key: "updated_at", label: "Seen"},
    ], await api("gpu/catalog-drift"), {emptyText: "Every GPU type the APIs list is classified."});
  } catch (err) { showError(box, err); }
}

async function loadCheapest() {
  const box = document.getElementById("cheapest-table");
  const params = Object.fromEntries(new FormData(document.getElementById("cheapest-form")).entries());
  try {
    renderTable(box, [
      {label: "#", fmt: r => r.feasible ? String(r.rank) : "–"},
      {key: "provider", label: "Provider"}, {key: "instance_type", label: "Instance"}, {key: "region", label: "Region"},
      {key: "pricing_model", label: "Pricing"}, {label: "Per hour", num: true, fmt: r => fmtMoney(r.price_per_hour, r.currency)},
      {label: "Expected cost", num: true, fmt: r => fmtMoney(r.expected_cost, r.currency)},
      {label: "Expected hours", num: true, fmt: r => fmtNum(r.expected_hours, 2)},
      {label: "Interruptions", num: true, fmt: r => fmtNum(r.expected_interruptions, 2)}, {key: "note", label: "Note"},
    ], rankRows(await api("gpu/cheapest", params)), {emptyText: "No benchmarked offers yet."});
  } catch (err) { showError(box, err); }
}
function rankRows(data) { let i = 0; (data.items || []).forEach(r => { if (r.feasible) r.rank = ++i; }); return data; }

/* -- boot ---------------------------------------------------------------------------------- */
document.addEventListener("DOMContentLoaded", async () => {
  document.getElementById("cost-form").addEventListener("submit", e => { e.preventDefault(); loadCost(); });
  document.getElementById("cheapest-form").addEventListener("submit", e => { e.preventDefault(); loadCheapest(); });
  document.getElementById("showback-period").addEventListener("change", e => { showbackState.period = e.target.value; document.getElementById("showback-drill").hidden = true; loadShowback(1); });
  api("me").then(u => { document.getElementById("user").textContent = "signed in as " + u.name; }).catch(() => {});
  await Promise.all([loadCost(), loadShowback(1), loadAnomalies(1), loadPolicies(1), loadTags(1), loadGpu(), loadDrift(), loadCheapest()]);
  document.body.dataset.ready = "true";
});

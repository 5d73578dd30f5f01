/* FinOps view, planning part: month-end forecasts, budget vs actual vs forecast, and feedback
   on anomalies (the app's one write). Uses the helpers of app.js (el, api, renderTable,
   fmtMoney, showError, showEmpty); every server value goes in through textContent. */
"use strict";

let feedbackLabels = {};

async function postFeedback(anomalyId, body) {
  /* JSON + same-origin: the server refuses anything a cross-site form could send. */
  const res = await fetch("api/anomalies/" + encodeURIComponent(anomalyId) + "/feedback", {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", Accept: "application/json"}, body: JSON.stringify(body)});
  if (!res.ok) {
    let detail = res.statusText;
    try { const j = await res.json(); detail = typeof j.detail === "string" ? j.detail : JSON.stringify(j.detail); } catch (e) { /* not JSON */ }
    throw new Error(res.status + " " + detail);
  }
  return res.json();
}

/* The "Feedback" cell of an anomaly row (app.js calls it): the latest label and a small form. */
function feedbackCell(row) {
  const latest = feedbackLabels[row.anomaly_id];
  const state = el("span", {class: "muted"}, latest ? latest.label + (latest.snooze_until ? " until " + latest.snooze_until : "") + " · " + latest.created_by : "no feedback yet");
  const label = el("select", {"aria-label": "label"},
    el("option", {value: "acknowledged"}, "real: acknowledge"), el("option", {value: "expected"}, "expected: not an anomaly"),
    el("option", {value: "snoozed"}, "snooze this monitor until"));
  const until = el("input", {type: "date", "aria-label": "snooze until", hidden: ""});
  const note = el("input", {type: "text", maxlength: "2000", placeholder: "note", "aria-label": "note"});
  const msg = el("span", {class: "muted"});
  label.addEventListener("change", () => { until.hidden = label.value !== "snoozed"; });
  const form = el("form", {class: "feedback"}, label, until, note, el("button", {type: "submit"}, "Save"), msg);
  form.addEventListener("click", e => e.stopPropagation());
  form.addEventListener("submit", async e => {
    e.preventDefault();
    const body = {label: label.value, note: note.value || null};
    if (label.value === "snoozed") body.snooze_until = until.value || null;
    try {
      const saved = await postFeedback(row.anomaly_id, body);
      feedbackLabels[row.anomaly_id] = saved;
      state.textContent = saved.label + (saved.snooze_until ? " until " + saved.snooze_until : "") + " · " + saved.created_by;
      msg.textContent = "saved"; loadFeedbackSummary();
    } catch (err) { msg.textContent = "Could not save: " + err.message; }
  });
  const cell = el("div", {"data-anomaly": row.anomaly_id}, state, form);
  if (new URLSearchParams(location.search).get("anomaly") === row.anomaly_id) cell.classList.add("selected");
  return cell;
}

async function loadFeedbackSummary() {
  const box = document.getElementById("anomaly-precision");
  try {
    const data = await api("anomaly-feedback");
    feedbackLabels = data.labels || {};
    box.textContent = data.labelled ? `Precision people report: ${(100 * data.precision).toFixed(0)} % ` +
      `(${data.true_alerts} real of ${data.labelled} labelled alerts)` : "No labelled alerts yet.";
  } catch (err) { box.textContent = "Could not load feedback: " + err.message; }
}

/* -- forecasts ----------------------------------------------------------------------------- */
async function loadForecasts(page) {
  const box = document.getElementById("forecasts-table");
  const dim = document.getElementById("forecast-dim").value;
  try {
    const data = await api("forecasts", {dimension: dim, page: page || 1, page_size: 15});
    const m = k => r => fmtMoney(r[k], r.currency);
    const band = (lo, hi) => r => fmtMoney(r[lo], r.currency) + " – " + fmtMoney(r[hi], r.currency);
    document.getElementById("forecast-period").textContent = data.period ? data.period + (data.items && data.items[0] ? " as of " + data.items[0].as_of : "") : "";
    renderTable(box, [
      {key: "key", label: dim === "team" ? "Team" : dim === "service" ? "Service" : "Account"},
      {label: "So far", num: true, fmt: m("to_date")}, {label: "Month-end forecast", num: true, fmt: m("forecast")},
      {label: "80 % interval", num: true, fmt: band("lo80", "hi80")}, {label: "95 % interval", num: true, fmt: band("lo95", "hi95")},
      {key: "days_left", label: "Days left", num: true},
    ], data, {onPage: loadForecasts, emptyText: "No forecasts yet."});
  } catch (err) { showError(box, err); }
}

/* -- budgets ------------------------------------------------------------------------------- */
async function loadBudgets() {
  const box = document.getElementById("budgets-table");
  try {
    const data = await api("budgets", {name: new URLSearchParams(location.search).get("budget")});
    document.getElementById("budget-period").textContent = data.period || "";
    const pct = v => v === null || v === undefined ? "" : " (" + v + " %)";
    renderTable(box, [
      {key: "name", label: "Budget"},
      {label: "Scope", fmt: r => r.scope + ": " + r.scope_value + (r.kind === "gpu" ? " (GPU)" : "")},
      {label: "Budget", num: true, fmt: r => fmtMoney(r.amount, r.currency)},
      {label: "Actual", num: true, fmt: r => r.actual == null ? "no data yet" : fmtMoney(r.actual, r.currency) + pct(r.actual_pct)},
      {label: "Forecast", num: true, fmt: r => r.forecast == null ? "" : fmtMoney(r.forecast, r.currency) + pct(r.forecast_pct)},
      {label: "80 % interval", num: true, fmt: r => r.lo80 == null ? "" : fmtMoney(r.lo80, r.currency) + " – " + fmtMoney(r.hi80, r.currency)},
      {label: "Budget vs actual vs forecast", fmt: r => r.actual == null ? "" : el("span", {},
        el("meter", {min: "0", max: String(Math.max(Number(r.amount), Number(r.forecast || 0))), low: String(0.8 * Number(r.amount)),
                     high: String(Number(r.amount)), value: String(Number(r.actual)), title: "actual"}),
        el("meter", {min: "0", max: String(Math.max(Number(r.amount), Number(r.forecast || 0))), low: String(0.8 * Number(r.amount)),
                     high: String(Number(r.amount)), value: String(Number(r.forecast || 0)), title: "forecast"}))},
      {label: "Thresholds crossed", fmt: r => (r.crossed || []).map(c => c.basis + " " + c.threshold_pct + " %" + (c.alerted_at ? "" : " (not alerted)")).join(", ")},
    ], data, {emptyText: "No budgets configured."});
  } catch (err) { showError(box, err); }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("forecast-dim").addEventListener("change", () => loadForecasts(1));
  loadForecasts(1); loadBudgets();
});

/* FinOps view, commitments page: utilisation per commitment, coverage by provider / account /
   team / family, the expiry calendar and the latest purchase advice (advice only: nothing is
   bought). Uses the helpers of app.js (el, api, renderTable, fmtMoney, showError); every
   server value goes in through textContent. */
"use strict";

function pctCell(v) { return v === null || v === undefined ? "" : (100 * Number(v)).toFixed(1) + " %"; }

async function loadCommitmentUtilisation() {
  const box = document.getElementById("commitments-utilisation");
  try {
    const data = await api("commitments/utilisation");
    document.getElementById("commitments-period").textContent = data.period || "";
    const m = k => r => fmtMoney(r[k], r.currency);
    renderTable(box, [
      {key: "provider", label: "Cloud"}, {key: "commitment_type", label: "Type"}, {key: "commitment_id", label: "Commitment"},
      {label: "Used", num: true, fmt: m("used")}, {label: "Unused", num: true, fmt: m("unused")},
      {label: "Utilisation", num: true, fmt: r => pctCell(r.utilisation)},
      {label: "Covered (list)", num: true, fmt: m("covered_list")}, {label: "Net savings", num: true, fmt: m("net_savings")},
    ], data, {emptyText: "No commitments in this month."});
  } catch (err) { showError(box, err); }
}

async function loadCommitmentCoverage() {
  const box = document.getElementById("commitments-coverage");
  const by = document.getElementById("commitments-by").value;
  try {
    const data = await api("commitments/coverage", {by: by});
    const m = k => r => fmtMoney(r[k], r.currency);
    renderTable(box, [
      {key: "provider", label: "Cloud"}, {label: by[0].toUpperCase() + by.slice(1), fmt: r => r.key == null ? "(none)" : r.key},
      {label: "Covered (list)", num: true, fmt: m("covered_list")}, {label: "On demand, coverable", num: true, fmt: m("eligible_list")},
      {label: "Coverage", num: true, fmt: r => pctCell(r.coverage)}, {label: "Unused commitment", num: true, fmt: m("unused")},
    ], data, {emptyText: "No coverage data yet."});
  } catch (err) { showError(box, err); }
}

async function loadCommitmentCalendar() {
  const box = document.getElementById("commitments-calendar");
  try {
    const data = await api("commitments/calendar");
    renderTable(box, [
      {key: "end", label: "Ends"}, {key: "days_left", label: "Days left", num: true}, {key: "provider", label: "Cloud"},
      {key: "commitment_id", label: "Commitment"}, {key: "covers", label: "Covers"}, {key: "term", label: "Term"},
      {key: "payment_option", label: "Payment"},
    ], data, {emptyText: "No end dates known yet."});
  } catch (err) { showError(box, err); }
}

async function loadCommitmentAdvice() {
  const box = document.getElementById("commitments-advice");
  try {
    const data = await api("commitments/advice");
    document.getElementById("commitments-note").textContent = data.note || "";
    const m = k => r => fmtMoney(r[k], r.currency);
    renderTable(box, [
      {key: "provider", label: "Cloud"}, {key: "product", label: "Product"}, {key: "scope", label: "Scope"},
      {label: "Term", fmt: r => r.term_years + " y"}, {key: "payment", label: "Payment"},
      {label: "Discount", num: true, fmt: r => pctCell(r.discount)}, {key: "rate_source", label: "Rate from"},
      {label: "Commit $/h", num: true, fmt: r => r.commitment_hourly},
      {label: "Upfront", num: true, fmt: m("upfront")}, {label: "Monthly", num: true, fmt: m("monthly_recurring")},
      {label: "Expected utilisation", num: true, fmt: r => pctCell(r.expected_utilisation)},
      {label: "Savings / month", num: true, fmt: m("expected_savings_monthly")},
      {label: "Savings / term", num: true, fmt: m("expected_savings_term")},
      {label: "Break-even", fmt: r => "≥ " + pctCell(r.break_even_utilisation) + " used" + (r.break_even_months ? ", month " + r.break_even_months : "")},
      {label: "Savings / term if usage drops", num: true, fmt: r => fmtMoney(r.drop_savings_term, r.currency) + " (−" + pctCell(r.drop_share) + ")"},
    ], data, {emptyText: "No purchase advice yet."});
  } catch (err) { showError(box, err); }
}

async function loadCapacityBlocks() {
  const box = document.getElementById("commitments-capacity-blocks");
  try {
    const data = await api("commitments/capacity-blocks");
    const m = k => r => r[k] === null ? "no on-demand price" : fmtMoney(r[k], r.currency);
    renderTable(box, [
      {key: "region", label: "Region"}, {key: "instance_type", label: "Instance type"},
      {key: "instance_count", label: "Count", num: true}, {key: "hours", label: "Hours", num: true},
      {key: "start", label: "Start"}, {label: "Upfront fee", num: true, fmt: m("upfront_fee")},
      {label: "$/instance-hour", num: true, fmt: r => r.per_instance_hour},
      {label: "On-demand $/instance-hour", num: true, fmt: r => r.on_demand_per_instance_hour ?? "–"},
      {label: "Saving vs on demand", num: true, fmt: m("saving_vs_on_demand")},
    ], data, {emptyText: "No Capacity Block offerings fetched."});
  } catch (err) { showError(box, err); }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("commitments-by").addEventListener("change", loadCommitmentCoverage);
  loadCommitmentUtilisation(); loadCommitmentCoverage(); loadCommitmentCalendar(); loadCommitmentAdvice();
  loadCapacityBlocks();
});

/* FinOps view, inference cost: the serving cost matrix ($ per 1,000 requests and per 1M output
   tokens for every priced offer at a P99 target) and fleet advice for a traffic profile. Uses
   app.js's helpers (el, api, renderTable, fmtNum, showError); server values go in as text. */
"use strict";

const usd6 = v => (v === null || v === undefined) ? "" : "$" + Number(v).toFixed(6);

async function loadInferenceMatrix() {
  const box = document.getElementById("inference-table");
  const form = document.getElementById("inference-form");
  const p = Object.fromEntries(new FormData(form));
  try {
    const data = await api("inference/matrix", {resnet50_p99_ms: p.resnet50_p99_ms, decoder_p99_ms: p.decoder_p99_ms});
    renderTable(box, [
      {key: "model", label: "Model"}, {key: "dtype", label: "Precision"},
      {label: "Offer", fmt: r => `${r.provider} ${r.region} ${r.instance_type}`}, {key: "pricing_model", label: "Pricing"},
      {label: "GPUs", num: true, fmt: r => r.gpu_count},
      {label: "P99 target (ms)", num: true, fmt: r => fmtNum(r.p99_target_ms, 0)},
      {label: "Batch", num: true, fmt: r => r.batch ?? ""}, {label: "P99 (ms)", num: true, fmt: r => fmtNum(r.p99_ms, 1)},
      {label: "req/s (instance)", num: true, fmt: r => fmtNum(r.requests_per_s, 1)},
      {label: "$/h", num: true, fmt: r => r.price_per_hour},
      {label: "$ / 1k requests", num: true, fmt: r => usd6(r.usd_per_1k_requests)},
      {label: "$ / 1M output tokens", num: true, fmt: r => usd6(r.usd_per_1m_output_tokens)},
      {key: "note", label: "Note"},
    ], data, {emptyText: "No serving benchmark with a price yet."});
    const note = document.getElementById("inference-note");
    note.textContent = data.empty ? "" : (data.unpriced && data.unpriced.length ? "Benchmarked without a price: " +
      data.unpriced.map(k => k.join(" ")).join(", ") + ". " : "") + (data.unmeasured ? data.unmeasured + " priced offers have no serving benchmark." : "");
  } catch (err) { showError(box, err); }
}

async function loadFleet() {
  const box = document.getElementById("fleet-result");
  const p = Object.fromEntries(new FormData(document.getElementById("fleet-form")));
  p.allow_spot = document.querySelector("#fleet-form [name=allow_spot]").checked;
  try {
    const data = await api("inference/fleet", p);
    if (data.empty) { box.replaceChildren(el("p", {class: "empty"}, data.reason)); return; }
    const plan = data.plan;
    const offer = o => o ? `${o.provider} ${o.region} ${o.instance_type} (${o.pricing_model}, ${o.dtype}, batch ${o.batch}, $${o.price_per_hour}/h)` : "none";
    box.replaceChildren(
      el("p", {}, `Base: ${plan.base_count} × ${offer(plan.base)} — ${fmtMoney(plan.base_cost, plan.currency)} / month`),
      el("p", {}, `Burst: ${plan.burst_peak_count} at peak, ${plan.burst_offpeak_count} off-peak × ${offer(plan.burst)} — ${fmtMoney(plan.burst_cost, plan.currency)} / month`),
      el("p", {}, el("strong", {}, `Total ${fmtMoney(plan.monthly_cost, plan.currency)} / month`),
        plan.ondemand_only_cost ? ` (on-demand only: ${fmtMoney(plan.ondemand_only_cost, plan.currency)})` : ""),
      ...plan.notes.map(n => el("p", {class: "muted"}, n)));
  } catch (err) { showError(box, err); }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("inference-form").addEventListener("submit", e => { e.preventDefault(); loadInferenceMatrix(); });
  document.getElementById("fleet-form").addEventListener("submit", e => { e.preventDefault(); loadFleet(); });
  loadInferenceMatrix();
});

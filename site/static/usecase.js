// Recompute the UseCaseRank boards in the browser with the reader's weights: run score =
// 100 × the weighted mean of its five metrics (weights need not sum to 1); group score = the trust-and-recency weighted
// mean of its live runs (runs under review count nowhere); groups with 5 or more runs are
// ranked. Plain JavaScript over the page's own data; nothing is fetched.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("usecase-runs").textContent);
  var form = document.getElementById("weight-form");
  var metrics = ["outcome", "cost_efficiency", "speed", "autonomy", "first_try"];
  var published = {};
  metrics.forEach(function (m) { published[m] = Number(form.elements[m].value); });

  function recompute() {
    var weights = {};
    var total = 0;
    metrics.forEach(function (m) {
      weights[m] = Math.max(0, Number(form.elements[m].value) || 0);
      total += weights[m];
    });
    if (total <= 0) { return; }
    var groups = {};
    data.forEach(function (run) {
      if (run.under_review) { return; }
      var score = 0;
      metrics.forEach(function (m) { score += weights[m] * run["metric_" + m]; });
      score /= total;
      var key = run.use_case + "\u0000" + run.group;
      var g = groups[key] || (groups[key] = { sum: 0, weight: 0, runs: 0 });
      g.sum += run.weight * 100 * score;
      g.weight += run.weight;
      g.runs += 1;
    });
    document.querySelectorAll("table.usecase-board").forEach(function (table) {
      var useCase = table.getAttribute("data-use-case");
      var rows = Array.prototype.slice.call(table.querySelectorAll("tbody tr"));
      var scored = rows.map(function (row) {
        var g = groups[useCase + "\u0000" + row.getAttribute("data-group")];
        var score = g && g.weight > 0 ? g.sum / g.weight : null;
        row.querySelector(".score").textContent = score === null ? "\u2014" : score.toFixed(1);
        return { row: row, score: score, ranked: g && g.runs >= 5 };
      });
      var ranked = scored.filter(function (s) { return s.ranked && s.score !== null; });
      ranked.sort(function (a, b) { return b.score - a.score; });
      scored.forEach(function (s) { s.row.querySelector(".rank").textContent = "\u2014"; });
      ranked.forEach(function (s, i) {
        var rank = i > 0 && s.score === ranked[i - 1].score ? ranked[i - 1].rank : i + 1;
        s.rank = rank;
        s.row.querySelector(".rank").textContent = String(rank);
      });
    });
  }
  form.addEventListener("input", recompute);
  document.getElementById("reset-weights").addEventListener("click", function () {
    metrics.forEach(function (m) { form.elements[m].value = published[m]; });
    recompute();
  });
})();

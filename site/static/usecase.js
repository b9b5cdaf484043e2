// The UseCaseRank boards with the reader's own weights. The published board (score, rank)
// is what the page shows first and what "Published weights" restores, exactly as released.
// With other weights the page recomputes by the published rules: run score = 100 x the
// weighted mean of its five metrics (weights need not sum to 1), clipped to 0-100; group score
// = the trust-and-recency weighted mean of its counted runs (runs under review count
// nowhere), blended as published (blend_score_share x that + the rest x 100 x the group's
// published Bradley-Terry win probability) where the release blended it; groups with
// min_runs_for_rank counted runs are ranked, ties sharing the best rank (1, 1, 3). The win
// probabilities stay as published: they come from rerun pairs scored at the published
// weights. Each table is one board of the published rank rule (a use case's real groups, or
// its simulated ones) and is ranked on its own, as the rule ranks it. Plain JavaScript over
// the page's own data; nothing is fetched.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("usecase-runs").textContent);
  var form = document.getElementById("weight-form");
  var metrics = data.metrics;
  var share = Number(data.blend_score_share);
  var minRuns = Number(data.min_runs_for_rank);
  var publishedWeights = {};
  metrics.forEach(function (m) { publishedWeights[m] = Number(form.elements[m].value); });
  var blend = {};
  data.groups.forEach(function (g) {
    if (g.blended && g.bt_win_probability !== null) {
      blend[g.use_case + "\u0000" + g.group] = g.bt_win_probability;
    }
  });
  var cells = [];
  document.querySelectorAll("table.usecase-board tbody tr").forEach(function (row) {
    var score = row.querySelector(".score");
    var rank = row.querySelector(".rank");
    cells.push({ score: score, rank: rank, scoreHtml: score.innerHTML, rankHtml: rank.innerHTML });
  });

  function recompute() {
    var weights = {};
    var total = 0;
    metrics.forEach(function (m) {
      weights[m] = Math.max(0, Number(form.elements[m].value) || 0);
      total += weights[m];
    });
    if (total <= 0) { return; }
    var groups = {};
    data.runs.forEach(function (run) {
      if (run.under_review) { return; }
      var score = 0;
      metrics.forEach(function (m) { score += weights[m] * run["metric_" + m]; });
      score = Math.min(100, Math.max(0, 100 * score / total));
      var key = run.use_case + "\u0000" + run.group;
      var g = groups[key] || (groups[key] = { sum: 0, weight: 0, runs: 0 });
      g.sum += run.weight * score;
      g.weight += run.weight;
      g.runs += 1;
    });
    document.querySelectorAll("table.usecase-board").forEach(function (table) {
      var useCase = table.getAttribute("data-use-case");
      var rows = Array.prototype.slice.call(table.querySelectorAll("tbody tr"));
      var scored = rows.map(function (row) {
        var key = useCase + "\u0000" + row.getAttribute("data-group");
        var g = groups[key];
        var score = g && g.weight > 0 ? g.sum / g.weight : null;
        if (score !== null && key in blend) {
          score = share * score + (1 - share) * 100 * blend[key];
        }
        row.querySelector(".score").textContent = score === null ? "\u2014" : score.toFixed(1);
        return { row: row, score: score, ranked: g && g.runs >= minRuns };
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
    metrics.forEach(function (m) { form.elements[m].value = publishedWeights[m]; });
    cells.forEach(function (c) { c.score.innerHTML = c.scoreHtml; c.rank.innerHTML = c.rankHtml; });
  });
})();

// The compare page: two to four models side by side, named in the address (?m=a,b,c, the
// slugs of their model pages). It fetches compare/index.json (every model, for the chooser)
// and each chosen model's page, whose #compare-data holds its figures as the build formatted
// them, and lays them out one row per figure. A difference is marked only where the board's own rule
// separates it: "pairs" (the board's significant pairwise test, an entry's `beats`) or
// "intervals" (the two intervals do not overlap). Plain JavaScript; no framework.
(function () {
  "use strict";
  var MAX = 4;
  var form = document.getElementById("compare-form");
  var status = document.getElementById("compare-status");
  var table = document.getElementById("compare-table");
  var inputs = Array.prototype.slice.call(form.querySelectorAll("input[name=pick]"));
  var bySlug = {};
  var byText = {};

  function text(node, value) { node.textContent = value; return node; }
  function el(tag, cls) { var n = document.createElement(tag); if (cls) { n.className = cls; } return n; }

  function wanted() {
    var m = new URLSearchParams(window.location.search).get("m") || "";
    var seen = {};
    return m.split(",").map(function (s) { return s.trim(); })
      .filter(function (s) { if (!s || seen[s]) { return false; } seen[s] = true; return true; })
      .slice(0, MAX);
  }

  function ahead(a, b) {
    // Whether entry a is separated above entry b by the board's own rule.
    if (a.row !== b.row || !a.separation) { return false; }
    if (a.separation === "pairs") { return a.beats.indexOf(b.key) !== -1; }
    if (a.separation === "intervals") {
      return a.low !== null && b.high !== null && a.low > b.high;
    }
    return false;
  }

  function cell(model, entries, others) {
    var td = el("td");
    td.setAttribute("data-model", model.slug);
    if (!entries.length) { text(td, "—"); return td; }
    entries.forEach(function (e) {
      var box = el("div", "compare-entry");
      if (e.label) { box.appendChild(text(el("span", "basis"), e.label)); box.appendChild(el("br")); }
      box.appendChild(text(el("strong", "value"), e.value_text));
      if (e.interval_text) {
        box.appendChild(text(el("span", "interval"), " " + e.interval_text + " (" + e.interval + ")"));
      }
      var facts = [];
      if (e.rank_text) { facts.push("rank " + e.rank_text); }
      if (e.cost_text) { facts.push(e.cost_text + " " + (e.cost_what || "")); }
      facts.push("data as of " + (e.as_of || "not stated") + (e.dated_by === "release" ? " (release)" : ""));
      box.appendChild(el("br"));
      box.appendChild(text(el("span", "basis"), facts.join(" · ")));
      others.forEach(function (o) {
        o.entries.forEach(function (f) {
          if (ahead(e, f)) {
            var mark = text(el("span", "separated-mark"), "▲ separated above " + o.model.name +
              (f.label ? " (" + f.label + ")" : ""));
            box.appendChild(el("br"));
            box.appendChild(mark);
            td.classList.add("separated");
          }
        });
      });
      if (e.simulated) { box.appendChild(text(el("span", "badge simulated"), "simulated")); }
      td.appendChild(box);
    });
    return td;
  }

  function show(models) {
    var head = table.tHead.rows[0];
    while (head.cells.length > 1) { head.deleteCell(1); }
    models.forEach(function (m) {
      var th = el("th");
      var a = text(el("a"), m.name);
      a.href = m.href;
      th.appendChild(a);
      head.appendChild(th);
    });
    var rows = [];
    var info = {};
    models.forEach(function (m) {
      m.entries.forEach(function (e) {
        if (!info[e.row]) { info[e.row] = e; rows.push(e.row); }
      });
    });
    rows.sort(function (a, b) {
      return info[a].order - info[b].order || (a < b ? -1 : a > b ? 1 : 0);
    });
    var body = table.tBodies[0];
    body.textContent = "";
    rows.forEach(function (row) {
      var tr = el("tr");
      tr.setAttribute("data-row", row);
      var th = el("th");
      th.setAttribute("scope", "row");
      var a = text(el("a"), info[row].title);
      a.href = info[row].href;
      th.appendChild(a);
      th.appendChild(el("br"));
      th.appendChild(text(el("span", "basis"), info[row].figure + (info[row].separation ? "" : " · no separation rule")));
      tr.appendChild(th);
      var per = models.map(function (m) {
        return { model: m, entries: m.entries.filter(function (e) { return e.row === row; }) };
      });
      per.forEach(function (p) {
        tr.appendChild(cell(p.model, p.entries, per.filter(function (o) { return o !== p; })));
      });
      body.appendChild(tr);
    });
    table.hidden = !models.length;
  }

  function load(slugs) {
    inputs.forEach(function (input, i) {
      input.value = slugs[i] && bySlug[slugs[i]] ? bySlug[slugs[i]].name : "";
    });
    var unknown = slugs.filter(function (s) { return !bySlug[s]; });
    var known = slugs.filter(function (s) { return bySlug[s]; });
    if (unknown.length) {
      text(status, "Not a model of this release: " + unknown.join(", ") + ".");
    }
    Promise.all(known.map(function (s) {
      // Each model's figures ride on its own page (#compare-data), written with the page.
      return fetch(bySlug[s].href).then(function (r) { return r.text(); }).then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        return JSON.parse(doc.getElementById("compare-data").textContent);
      });
    })).then(function (models) {
      show(models);
      if (!unknown.length) {
        text(status, models.length < 2 ? "Choose two to " + MAX + " models." :
          "Comparing " + models.map(function (m) { return m.name; }).join(", ") + ".");
      }
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var slugs = [];
    var bad = [];
    inputs.forEach(function (input) {
      var v = input.value.trim();
      if (!v) { return; }
      var found = byText[v.toLowerCase()];
      if (found) { if (slugs.indexOf(found) === -1) { slugs.push(found); } } else { bad.push(v); }
    });
    if (bad.length) { text(status, "No model named " + bad.join(", ") + "."); return; }
    var url = new URL(window.location.href);
    url.searchParams.set("m", slugs.join(","));
    window.history.pushState(null, "", url.pathname + "?m=" + slugs.map(encodeURIComponent).join(","));
    load(slugs);
  });

  window.addEventListener("popstate", function () { load(wanted()); });

  fetch("compare/index.json").then(function (r) { return r.json(); }).then(function (index) {
    var list = document.getElementById("compare-models");
    index.forEach(function (m) {
      bySlug[m.slug] = m;
      if (!byText[m.name.toLowerCase()]) { byText[m.name.toLowerCase()] = m.slug; }
      byText[m.id.toLowerCase()] = m.slug;
      byText[m.slug.toLowerCase()] = m.slug;
      var option = el("option");
      option.value = m.name;
      list.appendChild(option);
    });
    load(wanted());
  });
})();

// Bench tables: progressive enhancement for every table of the site. Without this file each
// page reads in full (rows in published order, every column reachable by scrolling, headers
// sticky by CSS); with it a reader can also sort by any column, filter long tables, and see
// how many columns lie off-screen. Generic on purpose: any table with a <thead> gets it, a
// table opts out with class "static". The filter box and the cue go inside the table's own
// box (held at its left edge), so the page's structure around the box stays as rendered.
// Plain JavaScript over the page itself; nothing fetched.
(function () {
  "use strict";
  var FILTER_FROM = 12; // body rows from which a table gets a filter box (fewer read at a glance)
  var MISSING = "\u2014";
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  // A cell's sort key: `data-sort` when given, else its text; numbers (also "$1.50", "3 of
  // 6", "1–3") as numbers, ISO dates and other text as text, a dash or blank as missing.
  function key(cell) {
    if (!cell) return null;
    var raw = (cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent).trim();
    if (raw === "" || raw === MISSING) return null;
    if (/^\d{4}-\d\d-\d\d/.test(raw)) return raw;
    if (/^[-\u2212+]?\$?[\d.,]+/.test(raw)) {
      var number = parseFloat(raw.replace(/[$,]/g, "").replace("\u2212", "-"));
      if (!isNaN(number)) return number;
    }
    return raw;
  }

  function compare(a, b) {
    if (typeof a === "number" && typeof b === "number") return a - b;
    if (typeof a === "number") return -1;
    if (typeof b === "number") return 1;
    return collator.compare(a, b);
  }

  function bodyRows(table) {
    return table.tBodies.length ? Array.prototype.slice.call(table.tBodies[0].rows) : [];
  }

  function sortable(table) {
    var head = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
    var rows = bodyRows(table);
    if (!head || rows.length < 2) return;
    if (rows.some(function (r) { return r.cells.length !== head.cells.length; })) return;
    rows.forEach(function (r, i) { r.dataset.order = String(i); });
    Array.prototype.forEach.call(head.cells, function (th, column) {
      if (!th.textContent.trim()) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener("click", function () {
        var next = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
        Array.prototype.forEach.call(head.cells, function (c) { c.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", next);
        var sign = next === "ascending" ? 1 : -1;
        var keyed = bodyRows(table).map(function (r) { return [key(r.cells[column]), r]; });
        keyed.sort(function (x, y) {
          if (x[0] === null || y[0] === null) { // missing values last, whichever the direction
            return (x[0] === null) - (y[0] === null) || x[1].dataset.order - y[1].dataset.order;
          }
          return sign * compare(x[0], y[0]) || x[1].dataset.order - y[1].dataset.order;
        });
        var body = table.tBodies[0];
        keyed.forEach(function (pair) { body.appendChild(pair[1]); });
      });
    });
  }

  function filterable(table, wrapper) {
    var rows = bodyRows(table);
    if (rows.length < FILTER_FROM) return null;
    var label = document.createElement("label");
    label.className = "table-filter";
    var input = document.createElement("input");
    input.type = "search";
    input.placeholder = "Filter these " + rows.length + " rows";
    input.setAttribute("aria-label", "Filter rows of the table below");
    var shown = document.createElement("span");
    shown.className = "shown";
    shown.setAttribute("aria-live", "polite");
    label.appendChild(input);
    label.appendChild(shown);
    wrapper.insertBefore(label, wrapper.firstChild);
    var texts = rows.map(function (r) { return r.textContent.toLowerCase(); });
    function apply() {
      var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var count = 0;
      rows.forEach(function (r, i) {
        var hit = terms.every(function (t) { return texts[i].indexOf(t) >= 0; });
        r.hidden = !hit;
        count += hit;
      });
      shown.textContent = terms.length ? count + " of " + rows.length + " rows" : "";
    }
    input.addEventListener("input", apply);
    return { input: input, apply: apply };
  }

  // A visible cue whenever a table (or a chart) is wider than its box: for a table, how many
  // columns are off-screen on each side.
  function cue(wrapper, table) {
    var note = document.createElement("p");
    note.className = "scroll-cue";
    note.setAttribute("aria-live", "polite");
    wrapper.insertBefore(note, table && table.parentNode === wrapper ? table : wrapper.firstChild);
    function update() {
      if (wrapper.scrollWidth <= wrapper.clientWidth + 1) {
        note.hidden = true;
        wrapper.classList.remove("overflowing");
        return;
      }
      var parts = [];
      var head = table && (table.tHead ? table.tHead.rows[table.tHead.rows.length - 1] : table.rows[0]);
      if (head) {
        var box = wrapper.getBoundingClientRect();
        var right = 0, left = 0;
        Array.prototype.forEach.call(head.cells, function (c) {
          if (!c.getClientRects().length) return; // a folded column is not off-screen
          var r = c.getBoundingClientRect();
          if (r.right > box.right + 1) right += 1;
          if (r.left < box.left - 1) left += 1;
        });
        if (left) parts.push("\u2190 " + left + " column" + (left === 1 ? "" : "s") + " to the left");
        if (right) parts.push(right + " more column" + (right === 1 ? "" : "s") + " to the right \u2192");
        note.textContent = "Scroll the table sideways: " + (parts.join(", ") || "it is wider than the page");
      } else {
        var end = wrapper.scrollLeft + wrapper.clientWidth >= wrapper.scrollWidth - 1;
        note.textContent = end ? "\u2190 Scroll the chart back for its start"
          : "Scroll the chart sideways: more to the right \u2192";
      }
      note.hidden = false;
      wrapper.classList.add("overflowing");
    }
    wrapper.addEventListener("scroll", update, { passive: true });
    window.addEventListener("resize", update);
    update();
    return update;
  }

  // A scrolling box that a keyboard can reach: focusable (arrow keys then scroll it) and
  // named after its table's caption or the heading above it, so a screen reader says which
  // box it entered. Only a box that scrolls is made a stop: the others stay out of the tab order.
  function reachable(wrapper, table) {
    function update() {
      var scrolls = wrapper.scrollWidth > wrapper.clientWidth + 1 ||
        wrapper.scrollHeight > wrapper.clientHeight + 1;
      if (!scrolls) {
        if (wrapper.dataset.reachable) {
          ["tabindex", "role", "aria-label"].forEach(function (a) { wrapper.removeAttribute(a); });
          delete wrapper.dataset.reachable;
        }
        return;
      }
      if (wrapper.dataset.reachable || wrapper.hasAttribute("tabindex")) return;
      wrapper.dataset.reachable = "true";
      wrapper.setAttribute("tabindex", "0");
      wrapper.setAttribute("role", "region");
      wrapper.setAttribute("aria-label", name(wrapper, table) + " (scrolls)");
    }
    window.addEventListener("resize", update);
    update();
    return update;
  }

  function name(wrapper, table) {
    if (table && table.caption) return table.caption.textContent.trim();
    var svg = !table && wrapper.querySelector("svg[aria-label]");
    if (svg) return svg.getAttribute("aria-label");
    for (var node = wrapper; node && node !== document.body; node = node.parentNode) {
      for (var before = node.previousElementSibling; before; before = before.previousElementSibling) {
        if (/^H[1-6]$/.test(before.tagName)) return before.textContent.trim();
        var inner = before.querySelectorAll && before.querySelectorAll("h1, h2, h3, h4, h5, h6");
        if (inner && inner.length) return inner[inner.length - 1].textContent.trim();
      }
    }
    return table ? "Table" : "Chart";
  }

  // Column priorities. A table names the columns a phone must show in `data-keep` (header
  // texts separated by "|"); on a narrow screen the others fold away, with a button that
  // shows them all again and a line naming what is folded. Wide screens show every column.
  var NARROW = window.matchMedia("(max-width: 40rem)");
  function prioritised(table, wrapper, refresh) {
    var keep = (table.getAttribute("data-keep") || "").split("|").map(function (t) { return t.trim(); }).filter(Boolean);
    var head = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
    if (!keep.length || !head) return;
    var optional = [];
    Array.prototype.forEach.call(head.cells, function (th, column) {
      if (keep.indexOf(th.textContent.trim()) < 0) optional.push(column);
      else th.classList.add("kept");
    });
    if (!optional.length) return;
    var width = head.cells.length;
    Array.prototype.forEach.call(table.rows, function (row) {
      if (row.cells.length !== width) return; // a row spanning columns keeps its cells
      optional.forEach(function (c) { row.cells[c].classList.add("optional"); });
    });
    var names = optional.map(function (c) { return head.cells[c].textContent.trim(); });
    var bar = document.createElement("p");
    bar.className = "column-choice";
    var said = document.createElement("span");
    var button = document.createElement("button");
    button.type = "button";
    bar.appendChild(said);
    bar.appendChild(document.createTextNode(" "));
    bar.appendChild(button);
    wrapper.parentNode.insertBefore(bar, wrapper);
    function show() {
      var all = table.classList.contains("all-columns");
      var folded = NARROW.matches && !all;
      table.classList.toggle("folded", folded);
      bar.hidden = !NARROW.matches;
      said.textContent = folded
        ? "Showing " + (width - optional.length) + " of " + width + " columns; folded on this screen: " + names.join(", ") + "."
        : "Showing all " + width + " columns.";
      button.textContent = folded ? "Show all " + width + " columns" : "Show the main " + (width - optional.length);
      button.setAttribute("aria-expanded", folded ? "false" : "true");
      if (refresh) refresh();
    }
    button.addEventListener("click", function () {
      table.classList.toggle("all-columns");
      show();
    });
    if (NARROW.addEventListener) NARROW.addEventListener("change", show);
    show();
  }

  function search(filters) {
    var query = new URLSearchParams(window.location.search).get("q");
    var models = document.getElementById("models");
    if (!query || !models) return;
    var filter = filters.get(models);
    document.querySelectorAll("input[name=q]").forEach(function (i) { i.value = query; });
    if (filter) { filter.input.value = query; filter.apply(); }
  }

  var filters = new Map();
  document.querySelectorAll("table").forEach(function (table) {
    if (table.classList.contains("static") || !table.tHead) return;
    var wrapper = table.closest(".scroll") || table.parentNode;
    if (!table.classList.contains("matrix")) sortable(table);
    var filter = filterable(table, wrapper);
    if (filter) filters.set(table, filter);
    var updates = [];
    prioritised(table, wrapper, function () { updates.forEach(function (u) { u(); }); });
    if (wrapper.classList.contains("scroll")) updates.push(reachable(wrapper, table));
    updates.push(cue(wrapper, table));
  });
  document.querySelectorAll(".chart-box").forEach(function (box) {
    reachable(box, null);
    cue(box, null);
  });
  search(filters);
})();

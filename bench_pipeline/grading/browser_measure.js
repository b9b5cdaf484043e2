// The design measures of a prototype page at first load, over visible elements only.
// Run by the browser worker (grading/browser_worker.py) through Playwright's
// `page.evaluate(script, { sizeRatio, minCards })`; what each measure counts is defined in
// grading/browser.py. The file holds one arrow function expression and nothing else, because
// Playwright evaluates the text and calls the function it yields with the argument.
({ sizeRatio: SIZE_RATIO, minCards: MIN_CARDS }) => {
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 1;
  const paint = canvas.getContext("2d", { willReadFrequently: true });
  const normalised = new Map();
  const round3 = (x) => Math.round(x * 1000) / 1000;
  function rgba(value) {
    if (!value) return null;
    if (normalised.has(value)) return normalised.get(value);
    let parts = null;
    const m = value.match(
      /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)\s*(?:[,/]\s*([\d.]+)(%?))?\s*\)$/);
    if (m) {
      const alpha = m[4] === undefined ? 1 : parseFloat(m[4]) / (m[5] ? 100 : 1);
      parts = [Math.round(+m[1]), Math.round(+m[2]), Math.round(+m[3]), alpha];
    } else {
      paint.clearRect(0, 0, 1, 1);
      paint.fillStyle = "rgba(0, 0, 0, 0)";
      paint.fillStyle = value;
      paint.fillRect(0, 0, 1, 1);
      const d = paint.getImageData(0, 0, 1, 1).data;
      parts = [d[0], d[1], d[2], d[3] / 255];
    }
    const text = parts[3] > 0
      ? `rgba(${parts[0]}, ${parts[1]}, ${parts[2]}, ${round3(parts[3])})` : null;
    normalised.set(value, text);
    return text;
  }
  function visible(el) {
    const options = { checkOpacity: true, checkVisibilityCSS: true,
                      opacityProperty: true, visibilityProperty: true };
    if (!el.checkVisibility(options)) return false;
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0;
  }
  const FORM = new Set(["INPUT", "TEXTAREA", "SELECT", "BUTTON"]);
  function holdsText(el) {
    if (FORM.has(el.tagName) && !(el.tagName === "INPUT" && el.type === "hidden")) return true;
    for (const node of el.childNodes) {
      if (node.nodeType === Node.TEXT_NODE && node.data.trim()) return true;
    }
    return false;
  }
  const countGradients = (style) => (style.backgroundImage.match(/gradient\(/g) || []).length;
  function signature(el) {
    const classes = [...el.classList].sort();
    return el.tagName.toLowerCase() + classes.map((c) => "." + c).join("");
  }
  function describe(el) {
    const names = [];
    for (let node = el; node && names.length < 3; node = node.parentElement) {
      names.unshift(node.id ? `${node.tagName.toLowerCase()}#${node.id}` : signature(node));
      if (node.id) break;
    }
    return names.join(" > ");
  }
  function cardGrid(el, style) {
    if (!/^(inline-)?(grid|flex)$/.test(style.display)) return null;
    const groups = new Map();
    for (const child of el.children) {
      if (!visible(child)) continue;
      const key = signature(child);
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(child);
    }
    const candidates = [...groups.entries()]
      .filter(([, members]) => members.length >= MIN_CARDS)
      .sort((a, b) => b[1].length - a[1].length);
    for (const [key, members] of candidates) {
      const structured = members.every(
        (m) => [...m.children].filter(visible).length >= 2);
      if (!structured) continue;
      const boxes = members.map((m) => m.getBoundingClientRect());
      const similar = (sizes) => Math.max(...sizes) <= SIZE_RATIO * Math.min(...sizes);
      if (similar(boxes.map((b) => b.width)) && similar(boxes.map((b) => b.height))) {
        return { container: describe(el), signature: key, cards: members.length };
      }
    }
    return null;
  }
  const colours = new Set(), fonts = new Set(), grids = [];
  let gradients = 0;
  for (const el of document.querySelectorAll("*")) {
    if (!visible(el)) continue;
    const style = getComputedStyle(el);
    if (holdsText(el)) {
      colours.add(rgba(style.color));
      fonts.add(style.fontFamily.split(",")
        .map((f) => f.trim().replace(/^["']|["']$/g, "")).join(", "));
    }
    colours.add(rgba(style.backgroundColor));
    for (const side of ["top", "right", "bottom", "left"]) {
      const width = parseFloat(style.getPropertyValue(`border-${side}-width`));
      const line = style.getPropertyValue(`border-${side}-style`);
      if (width > 0 && line !== "none" && line !== "hidden") {
        colours.add(rgba(style.getPropertyValue(`border-${side}-color`)));
      }
    }
    gradients += countGradients(style);
    for (const pseudo of ["::before", "::after"]) {
      const box = getComputedStyle(el, pseudo);
      if (box.content !== "none" && box.content !== "normal" && box.display !== "none") {
        gradients += countGradients(box);
      }
    }
    const grid = cardGrid(el, style);
    if (grid) grids.push(grid);
  }
  colours.delete(null);
  const text = document.body ? document.body.innerText : "";
  return {
    colours: [...colours].sort(),
    gradients,
    font_families: [...fonts].sort(),
    card_grids: grids,
    em_dashes: text.split("\u2014").length - 1,
  };
}

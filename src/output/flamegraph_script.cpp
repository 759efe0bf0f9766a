// The script inside every flame graph SVG: the width follows the window, hover details, click to
// zoom (Reset zoom, Escape), search (the Search button, Ctrl+F or /) with the matched share of
// samples, and a button that flips between flame (root at the bottom) and icicle (root at the
// top). Zoom, search and orientation live in the URL's fragment (#view=icicle&zoom=X,D&search=RE)
// so that a link opens the same view. It reads the layout from the svg element's sg: attributes
// and each frame's sample offset and count from its rect's sg:x and sg:w, so nothing about the
// profile is duplicated here. Without scripts (an <img>), the file is a fixed 1200 px picture.
// Works in a standalone SVG and in the same file parsed as HTML.
#include <string_view>

namespace spyglass::output {

std::string_view flamegraph_script() noexcept {
    return R"JS("use strict";
(function () {
  // By qualified name, so that it also works when a browser parses the file as HTML (.html).
  const num = (el, name) => parseFloat(el.getAttribute("sg:" + name));
  let svg, total, xpad, frameHeight, fontSize, fontWidth, minWidth, top, maxDepth, textDy, width;
  let frames = [], byGroup = new Map(), zoomed = null, term = null, icicle = false;
  let started = false, resizing = false, highlighted = false;
  let details, matched, unzoomButton, searchButton, flipButton, legend;

  function fit(label, w, size) {
    const chars = Math.floor((w - 6) / ((size || fontSize) * fontWidth));
    if (chars < 3) return "";
    const points = Array.from(label);
    return points.length <= chars ? label : points.slice(0, chars - 2).join("") + "..";
  }

  function frameY(f) {
    return icicle ? top + f.depth * frameHeight : top + (maxDepth - f.depth) * frameHeight;
  }

  function place(f, x, w) {
    f.rect.setAttribute("x", (xpad + x).toFixed(2));
    f.rect.setAttribute("width", w.toFixed(2));
    const label = fit(f.label, w);
    if (!f.text) {
      if (!label) return;
      // The file leaves out the labels of frames too narrow for one.
      f.text = document.createElementNS("http://www.w3.org/2000/svg", "text");
      f.text.setAttribute("y", frameY(f) + textDy);
      f.g.appendChild(f.text);
    }
    f.text.setAttribute("x", (xpad + x + 3).toFixed(2));
    f.text.textContent = label;
  }

  function placeRows() {
    for (const f of frames) {
      const y = frameY(f);
      f.rect.setAttribute("y", y);
      if (f.text) f.text.setAttribute("y", y + textDy);
    }
  }

  // Every frame at the current width and zoom: the zoomed frame and what is above it fill the
  // width, its ancestors stay (dimmed) at full width, frames narrower than minWidth hide.
  function layout() {
    const z = zoomed, x0 = z ? z.x : 0, scale = width / (z ? z.w : total);
    for (const f of frames) {
      let show = true, parent = false;
      if (z && f.depth < z.depth) {
        parent = f.x <= z.x && f.x + f.w >= z.x + z.w;
        show = parent;
      } else if (z) {
        show = f.x >= z.x && f.x + f.w <= z.x + z.w;
      }
      show = show && (parent || f.w * scale >= minWidth);
      f.g.classList.toggle("parent", parent);
      f.g.classList.toggle("hide", !show);
      if (show) parent ? place(f, 0, width) : place(f, (f.x - x0) * scale, f.w * scale);
    }
    unzoomButton.classList.toggle("hide", !z);
  }

  // The legend's entries spaced by their rendered widths (the file's are estimates).
  function spaceLegend() {
    let x = 0;
    for (const el of legend.children) {
      el.setAttribute("x", x.toFixed(1));
      x += el.tagName === "rect" ? num(legend, "swatchgap") + parseFloat(el.getAttribute("width"))
                                 : el.getComputedTextLength() + num(legend, "gap");
    }
  }

  function fitWindow() {
    resizing = false;
    width = svg.getBoundingClientRect().width - 2 * xpad;
    for (const el of document.querySelectorAll(".center"))
      el.setAttribute("x", (xpad + width / 2).toFixed(1));
    const subtitle = document.getElementById("subtitle");
    subtitle.textContent = fit(subtitle.getAttribute("sg:text"), width);
    for (const el of document.querySelectorAll(".right"))
      el.setAttribute("x", (xpad + width).toFixed(1));
    if (legend) {
      // Centred, and smaller when the window is narrower than the legend.
      const box = legend.getBBox(); // without the group's own transform
      const scale = Math.min(1, width / box.width);
      const dx = xpad + width / 2 - (box.x + box.width / 2) * scale;
      const dy = (box.y + box.height) * (1 - scale);
      legend.setAttribute("transform", "translate(" + dx.toFixed(1) + "," + dy.toFixed(1) +
                          ") scale(" + scale.toFixed(3) + ")");
    }
    layout();
    fitTitle();
  }

  function highlight() {
    if (term === null) {
      if (highlighted) for (const f of frames) f.rect.setAttribute("fill", f.fill);
      highlighted = false;
      matched.textContent = " ";
      searchButton.textContent = "Search";
      return;
    }
    const re = new RegExp(term);
    const hits = [];
    highlighted = true;
    for (const f of frames) {
      const hit = re.test(f.label);
      f.rect.setAttribute("fill", hit ? "rgb(230,0,230)" : f.fill);
      if (hit) hits.push(f);
    }
    // The union of the matched ranges, so that a function at several depths counts once.
    const lo = zoomed ? zoomed.x : 0, hi = zoomed ? zoomed.x + zoomed.w : total;
    hits.sort((a, b) => a.x - b.x);
    let sum = 0, end = lo;
    for (const f of hits) {
      const s = Math.max(f.x, end), e = Math.min(f.x + f.w, hi);
      if (e > s) {
        sum += e - s;
        end = e;
      }
    }
    matched.textContent = "Matched: " + (hi > lo ? (100 * sum) / (hi - lo) : 0).toFixed(1) + "%";
    searchButton.textContent = "Reset search";
  }

  function validPattern(pattern) {
    try {
      new RegExp(pattern);
      return true;
    } catch (e) {
      return false;
    }
  }

  // --- the view in the URL --------------------------------------------------------------------

  function stateFragment() {
    const parts = [];
    if (icicle) parts.push("view=icicle");
    if (zoomed) parts.push("zoom=" + zoomed.x + "," + zoomed.depth);
    if (term !== null) parts.push("search=" + encodeURIComponent(term));
    return parts.length ? "#" + parts.join("&") : "";
  }

  function saveState() {
    const fragment = stateFragment();
    if (location.hash === fragment) return;
    try {
      history.replaceState(null, "", fragment || location.pathname + location.search);
    } catch (e) {
      location.hash = fragment;
    }
  }

  function readState() {
    const params = new Map();
    for (const part of location.hash.replace(/^#/, "").split("&")) {
      const at = part.indexOf("=");
      if (at <= 0) continue;
      try {
        params.set(part.slice(0, at), decodeURIComponent(part.slice(at + 1)));
      } catch (e) {}
    }
    const wasIcicle = icicle;
    icicle = params.get("view") === "icicle";
    zoomed = null;
    const at = (params.get("zoom") || "").split(",").map(Number);
    if (at.length === 2) zoomed = frames.find((f) => f.x === at[0] && f.depth === at[1] && f.depth > 0) || null;
    const pattern = params.get("search");
    term = pattern !== undefined && pattern !== "" && validPattern(pattern) ? pattern : null;
    if (icicle !== wasIcicle) placeRows();
    show();
  }

  // The centred title as long as the buttons on both sides leave room for.
  function fitTitle() {
    const title = document.getElementById("title");
    const left = zoomed ? parseFloat(unzoomButton.getAttribute("x")) + unzoomButton.getComputedTextLength()
                        : xpad + flipButton.getComputedTextLength();
    const right = xpad + searchButton.getComputedTextLength();
    const room = width + 2 * xpad - 2 * (Math.max(left, right) + 12);
    title.textContent = fit(title.getAttribute("sg:text"), room, num(svg, "titlesize"));
  }

  function show() {
    flipButton.textContent = icicle ? "Flame view" : "Icicle view";
    layout();
    highlight();
    fitTitle();
    saveState();
  }

  // --- actions --------------------------------------------------------------------------------

  function zoom(f) {
    zoomed = f.depth === 0 ? null : f;
    show();
  }

  function askSearch() {
    const pattern = prompt("Search for frames matching (regular expression):", term || "");
    if (!pattern) return;
    if (!validPattern(pattern)) {
      alert("Not a regular expression: " + pattern);
      return;
    }
    term = pattern;
    show();
  }

  function flip() {
    icicle = !icicle;
    placeRows();
    show();
  }

  function frameOf(event) {
    const g = event.target.closest ? event.target.closest("#frames > g") : null;
    return g ? byGroup.get(g) : undefined;
  }

  window.addEventListener("load", function () {
    if (started) return;
    started = true;
    const group = document.getElementById("frames");
    svg = group.ownerSVGElement;
    total = num(svg, "total");
    xpad = num(svg, "xpad");
    frameHeight = num(svg, "frameheight");
    fontSize = num(svg, "fontsize");
    fontWidth = num(svg, "fontwidth");
    minWidth = num(svg, "minwidth");
    top = num(svg, "top");
    maxDepth = num(svg, "depth");
    textDy = num(svg, "textdy");
    details = document.getElementById("details");
    matched = document.getElementById("matched");
    unzoomButton = document.getElementById("unzoom");
    searchButton = document.getElementById("search");
    flipButton = document.getElementById("flip");
    legend = document.getElementById("legend");
    if (legend) spaceLegend();
    for (const g of group.children) {
      const rect = g.querySelector("rect");
      const f = {
        g: g,
        rect: rect,
        text: g.querySelector("text"),
        title: g.querySelector("title").textContent,
        x: num(rect, "x"),
        w: num(rect, "w"),
        depth: num(rect, "d"),
        fill: rect.getAttribute("fill"),
      };
      f.label = f.title.split("\n")[0];
      frames.push(f);
      byGroup.set(g, f);
    }
    // From here on the picture is as wide as the window.
    svg.removeAttribute("viewBox");
    svg.setAttribute("width", "100%");
    document.getElementById("background").setAttribute("width", "100%");
    width = svg.getBoundingClientRect().width - 2 * xpad;
    fitWindow();
    readState();
    window.addEventListener("resize", function () {
      if (resizing) return;
      resizing = true;
      requestAnimationFrame(fitWindow);
    });
    window.addEventListener("hashchange", readState);
    group.addEventListener("click", function (event) {
      const f = frameOf(event);
      if (f) zoom(f);
    });
    group.addEventListener("mouseover", function (event) {
      const f = frameOf(event);
      if (f) details.textContent = f.title.split("\n").join("  |  ");
    });
    group.addEventListener("mouseout", function () {
      details.textContent = " ";
    });
    unzoomButton.addEventListener("click", function () {
      zoomed = null;
      show();
    });
    flipButton.addEventListener("click", flip);
    searchButton.addEventListener("click", function () {
      if (term === null) {
        askSearch();
      } else {
        term = null;
        show();
      }
    });
    window.addEventListener("keydown", function (event) {
      if ((event.key === "f" && (event.ctrlKey || event.metaKey)) || event.key === "/") {
        event.preventDefault();
        askSearch();
      } else if (event.key === "Escape") {
        zoomed = null;
        term = null;
        show();
      }
    });
  });
})();
)JS";
}

} // namespace spyglass::output

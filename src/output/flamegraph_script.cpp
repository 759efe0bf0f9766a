// The script inside every flame graph SVG: hover details, click to zoom (Reset zoom, Escape),
// search (the Search button, Ctrl+F or /) with the matched share of samples. It reads the
// layout from the svg element's sg: attributes and each frame's sample offset and count from
// its rect's sg:x and sg:w, so nothing about the profile is duplicated here. Works in a
// standalone SVG and in the same file parsed as HTML.
#include <string_view>

namespace spyglass::output {

std::string_view flamegraph_script() noexcept {
    return R"JS("use strict";
(function () {
  // By qualified name, so that it also works when a browser parses the file as HTML (.html).
  const num = (el, name) => parseFloat(el.getAttribute("sg:" + name));
  let total, xpad, frameHeight, fontSize, fontWidth, minWidth, bottom, width;
  let frames = [], byGroup = new Map(), zoomed = null, term = null, started = false;
  let details, matched, unzoomButton, searchButton;

  function fit(label, w) {
    const chars = Math.floor((w - 6) / (fontSize * fontWidth));
    if (chars < 3) return "";
    const points = Array.from(label);
    return points.length <= chars ? label : points.slice(0, chars - 2).join("") + "..";
  }

  function place(f, x, w) {
    f.rect.setAttribute("x", (xpad + x).toFixed(2));
    f.rect.setAttribute("width", w.toFixed(2));
    f.text.setAttribute("x", (xpad + x + 3).toFixed(2));
    f.text.textContent = fit(f.label, w);
  }

  function zoom(z) {
    zoomed = z;
    unzoomButton.classList.remove("hide");
    const scale = width / z.w;
    for (const f of frames) {
      f.g.classList.remove("parent", "hide");
      if (f.depth < z.depth) {
        if (f.x <= z.x && f.x + f.w >= z.x + z.w) {
          f.g.classList.add("parent");
          place(f, 0, width);
        } else {
          f.g.classList.add("hide");
        }
      } else if (f.x >= z.x && f.x + f.w <= z.x + z.w && f.w * scale >= minWidth) {
        place(f, (f.x - z.x) * scale, f.w * scale);
      } else {
        f.g.classList.add("hide");
      }
    }
    if (term !== null) search(term);
  }

  function unzoom() {
    zoomed = null;
    unzoomButton.classList.add("hide");
    const scale = width / total;
    for (const f of frames) {
      f.g.classList.remove("parent", "hide");
      place(f, f.x * scale, f.w * scale);
    }
    if (term !== null) search(term);
  }

  function search(pattern) {
    let re;
    try {
      re = new RegExp(pattern);
    } catch (e) {
      alert("Not a regular expression: " + e.message);
      return;
    }
    term = pattern;
    const hits = [];
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

  function resetSearch() {
    term = null;
    for (const f of frames) f.rect.setAttribute("fill", f.fill);
    matched.textContent = " ";
    searchButton.textContent = "Search";
  }

  function askSearch() {
    const pattern = prompt("Search for frames matching (regular expression):", term || "");
    if (pattern) search(pattern);
  }

  function frameOf(event) {
    const g = event.target.closest ? event.target.closest("#frames > g") : null;
    return g ? byGroup.get(g) : undefined;
  }

  window.addEventListener("load", function () {
    if (started) return;
    started = true;
    const svg = document.getElementById("frames").ownerSVGElement;
    total = num(svg, "total");
    xpad = num(svg, "xpad");
    frameHeight = num(svg, "frameheight");
    fontSize = num(svg, "fontsize");
    fontWidth = num(svg, "fontwidth");
    minWidth = num(svg, "minwidth");
    bottom = num(svg, "bottom");
    width = parseFloat(svg.getAttribute("width")) - 2 * xpad;
    details = document.getElementById("details");
    matched = document.getElementById("matched");
    unzoomButton = document.getElementById("unzoom");
    searchButton = document.getElementById("search");
    const group = document.getElementById("frames");
    for (const g of group.children) {
      const rect = g.querySelector("rect");
      const f = {
        g: g,
        rect: rect,
        text: g.querySelector("text"),
        title: g.querySelector("title").textContent,
        x: num(rect, "x"),
        w: num(rect, "w"),
        depth: Math.round((bottom - parseFloat(rect.getAttribute("y"))) / frameHeight) - 1,
        fill: rect.getAttribute("fill"),
      };
      f.label = f.title.split("\n")[0];
      frames.push(f);
      byGroup.set(g, f);
    }
    group.addEventListener("click", function (event) {
      const f = frameOf(event);
      if (!f) return;
      if (f.depth === 0) unzoom();
      else zoom(f);
    });
    group.addEventListener("mouseover", function (event) {
      const f = frameOf(event);
      if (f) details.textContent = f.title.split("\n").join("  |  ");
    });
    group.addEventListener("mouseout", function () {
      details.textContent = " ";
    });
    unzoomButton.addEventListener("click", unzoom);
    searchButton.addEventListener("click", function () {
      if (term !== null) resetSearch();
      else askSearch();
    });
    window.addEventListener("keydown", function (event) {
      if ((event.key === "f" && (event.ctrlKey || event.metaKey)) || event.key === "/") {
        event.preventDefault();
        askSearch();
      } else if (event.key === "Escape") {
        unzoom();
        resetSearch();
      }
    });
  });
})();
)JS";
}

} // namespace spyglass::output

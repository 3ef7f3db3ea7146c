// mprof html: sortable, filterable tables drawn a page at a time, links
// between call graph entries, and zoomable, searchable flame graphs.
// Names are only ever set with textContent, never parsed as markup.
"use strict";

(function () {
  const FIRST = 20; // rows drawn at first: a screen of the largest
  const PAGE = 100; // rows each "more" draws: a big profile has tens of thousands

  // ---- Tables ----

  // Every function's name once: id -> {name, label, index of its entry,
  // whole signature when the name is short, the name a path shows}.
  const functions = new Map(JSON.parse(document.getElementById("functions").textContent).map(
    ([id, name, label, index, signature, short]) =>
      [id, { name: name, label: label || name, index: index, signature: signature, short: short || name }]));

  // The text and the anchor of a function cell (see report/html_rows.py);
  // short, in a path whose names are short ("s").
  function functionText(part, short) {
    const f = functions.get(part.f);
    if (part.v === "l") return f.label;
    if (part.v === "g") return f.index === null ? f.label : `${f.label} [${f.index}]`;
    return short ? f.short : f.name;
  }

  // The parts a path or a fold shows, " > " between its elements.
  function joined(elements, partial) {
    const parts = partial ? ["... > "] : [];
    elements.forEach((element, n) => { if (n) parts.push(" > "); parts.push(element); });
    return parts;
  }

  function partText(part, short) {
    if (typeof part === "string") return part;
    if (typeof part === "number") return short ? functions.get(part).short : functions.get(part).name;
    if (part.p) return joined(part.p, part.z).map((element) => partText(element, part.s)).join("");
    if (part.fold) return joined(part.fold).map((element) => partText(element, short)).join("");
    return part.f === undefined ? part.t : functionText(part, short);
  }

  function cellText(cell) {
    return Array.isArray(cell) ? cell.map(partText).join("") : partText(cell);
  }

  // Frames of a long path folded into one element ([4 std::]): the
  // folded names on hover, the frames themselves on a click.
  function foldButton(part, short) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "fold";
    button.textContent = part.t;
    button.title = part.fold.map((element) => partText(element, short)).join("\n");
    button.addEventListener("click", () => {
      const opened = document.createElement("span");
      opened.className = "unfolded";
      fillCell(opened, joined(part.fold), short);
      button.replaceWith(opened);
    });
    return button;
  }

  function fillCell(td, cell, short) {
    const parts = Array.isArray(cell) ? cell : [cell];
    for (let part of parts) {
      if (typeof part === "string") {
        td.appendChild(document.createTextNode(part));
        continue;
      }
      if (typeof part === "number") part = { f: part };  // a function by its id alone
      if (part.p) {
        fillCell(td, joined(part.p, part.z), part.s);
        continue;
      }
      if (part.fold) {
        td.appendChild(foldButton(part, short));
        continue;
      }
      const anchor = part.f === undefined ? part.h :
        part.v !== "e" && functions.get(part.f).index !== null ? `fn-${part.f}` : null;
      const node = document.createElement(anchor ? "a" : "span");
      if (anchor) node.href = "#" + anchor;
      node.textContent = partText(part, short);
      const signature = part.f === undefined ? null : functions.get(part.f).signature;
      const title = [signature, part.title].filter(Boolean).join("\n");
      if (title) node.title = title;
      td.appendChild(node);
    }
  }

  // Numbers come formatted as the text report prints them: "1,002,252",
  // "(49)", "50.9", "[3]", "4,913/10,000"; a blank sorts below any number.
  function sortKey(cell, numeric) {
    const text = cellText(cell);
    if (!numeric) return text.toLowerCase();
    const above = text.startsWith("> "); // the bin of all sizes above 1024
    const match = text.replace(/^> |[,()[\]]/g, "").match(/^-?[0-9.]+/);
    return match ? parseFloat(match[0]) + (above ? 1 : 0) : -Infinity;
  }

  function row(cells, className) {
    const tr = document.createElement("tr");
    tr.className = className;
    for (const cell of cells) {
      const td = document.createElement("td");
      fillCell(td, cell);
      tr.appendChild(td);
    }
    return tr;
  }

  // A table draws a window of its rows, [start, end): the first page at
  // first, more pages on request, or the page of an entry a link goes to.
  class Table {
    constructor(table) {
      const id = table.id.replace(/^table-/, "");
      this.table = table;
      this.rows = JSON.parse(document.getElementById(table.dataset.rows).textContent);
      // The name filter looks at the last column (path, types, name) unless
      // a row says more, as a cycle does with its members' names.
      this.rows.forEach((r, n) => { r.n = n; r.lower = (r.f || cellText(r.c[r.c.length - 1])).toLowerCase(); });
      this.view = this.rows;
      this.start = 0;
      this.end = FIRST;
      const control = name => document.querySelector(`${name}[data-table="${id}"]`);
      this.input = control("input.filter");
      this.status = control(".status");
      this.more = control("button.more");
      this.earlier = control("button.earlier");
      this.headers = Array.from(table.querySelectorAll("th[data-col]"));
      this.byId = new Map(this.rows.filter(r => r.id).map(r => [r.id, r]));
      this.input.addEventListener("input", () => this.filter());
      this.more.addEventListener("click", () => { this.end += PAGE; this.draw(); });
      this.earlier.addEventListener("click", () => { this.start = Math.max(0, this.start - PAGE); this.draw(); });
      for (const th of this.headers) {
        th.tabIndex = 0; // sortable from the keyboard too
        th.addEventListener("click", () => this.sort(th));
        th.addEventListener("keydown", event => {
          if (event.key === "Enter" || event.key === " ") { event.preventDefault(); this.sort(th); }
        });
      }
      this.draw();
    }

    filter() {
      const text = this.input.value.trim().toLowerCase();
      this.view = text ? this.rows.filter(r => r.lower.includes(text)) : this.rows;
      this.start = 0;
      this.end = FIRST;
      this.draw();
    }

    // First click: largest numbers or A-Z first; the next click reverses.
    sort(th) {
      const column = Number(th.dataset.col);
      const numeric = th.dataset.type === "num";
      const previous = th.getAttribute("aria-sort");
      const descending = previous ? previous === "ascending" : numeric;
      for (const other of this.headers) other.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      const sign = descending ? -1 : 1;
      for (const r of this.rows) r.key = sortKey(r.c[column], numeric);
      this.rows.sort((a, b) => (a.key < b.key ? -sign : a.key > b.key ? sign : a.n - b.n));
      this.filter();
    }

    draw() {
      for (const body of Array.from(this.table.tBodies)) body.remove();
      const fragment = document.createDocumentFragment();
      for (const r of this.view.slice(this.start, this.end)) {
        const body = document.createElement("tbody");
        if (r.id) body.id = r.id;
        for (const cells of r.b || []) body.appendChild(row(cells, "caller"));
        body.appendChild(row(r.c, "main"));
        for (const cells of r.a || []) body.appendChild(row(cells, r.m ? "member" : "callee"));
        fragment.appendChild(body);
      }
      this.table.insertBefore(fragment, this.table.tFoot);
      const count = n => n.toLocaleString("en-US");
      const end = Math.min(this.end, this.view.length);
      const drawn = this.start ? `rows ${count(this.start + 1)}-${count(end)}` : count(end);
      const matching = this.view.length === this.rows.length ? "" : ` matching, of ${count(this.rows.length)}`;
      this.status.textContent = `${drawn} of ${count(this.view.length)} rows shown${matching}`;
      this.more.hidden = end >= this.view.length;
      this.earlier.hidden = this.start === 0;
    }

    // Draws the row with this anchor, clearing the filter if it hides it
    // and drawing its page if it is not drawn; false when there is no such row.
    reveal(id) {
      const target = this.byId.get(id);
      if (!target) return false;
      if (!this.view.includes(target)) {
        this.input.value = "";
        this.filter();
      }
      const position = this.view.indexOf(target);
      if (position < this.start || position >= this.end) {
        this.start = Math.floor(position / PAGE) * PAGE;
        this.end = this.start + PAGE;
        this.draw();
      }
      return true;
    }
  }

  const tables = Array.from(document.querySelectorAll("table.rows")).map(t => new Table(t));

  function reveal(id) {
    if (!id) return;
    for (const table of tables) {
      if (table.reveal(id)) {
        document.getElementById(id).scrollIntoView({ block: "start" });
        return;
      }
    }
  }

  function hashId() {
    return decodeURIComponent(location.hash.slice(1));
  }

  // A link to an entry that is not drawn yet (a later page, or filtered
  // out): draw it first, then let the browser go to it as usual.
  document.addEventListener("click", event => {
    const link = event.target.closest && event.target.closest('a[href^="#"]');
    if (!link) return;
    const id = decodeURIComponent(link.getAttribute("href").slice(1));
    if (document.getElementById(id)) return;
    event.preventDefault();
    if (hashId() === id) reveal(id);
    else { tables.some(t => t.reveal(id)); location.hash = id; }
  });
  window.addEventListener("hashchange", () => reveal(hashId()));
  reveal(hashId());

  // ---- Flame graphs ----

  class Flame {
    constructor(figure) {
      this.frames = Array.from(figure.querySelectorAll("g.f"));
      this.boxes = this.frames.map(g => g.querySelector("svg"));
      this.x = this.frames.map(g => Number(g.dataset.x));
      this.w = this.frames.map(g => Number(g.dataset.w));
      this.d = this.frames.map(g => Number(g.dataset.d));
      this.p = this.frames.map(g => Number(g.dataset.p));
      this.bytes = this.frames.map(g => Number(g.dataset.b));
      this.unit = figure.dataset.unit; // what a frame's width counts: bytes, or temporary allocations
      this.names = this.frames.map(g => (g.dataset.s || g.querySelector("text").textContent).toLowerCase());
      this.info = figure.querySelector(".flame-info");
      this.matches = figure.querySelector(".flame-matches");
      this.search = figure.querySelector(".flame-search");
      this.frames.forEach((g, i) => {
        g.addEventListener("click", () => this.zoom(i));
        g.addEventListener("mouseenter", () => {
          this.info.textContent = g.querySelector("title").textContent.replace(/\n/g, " \u2014 ");
        });
      });
      figure.querySelector(".flame-reset").addEventListener("click", () => this.zoom(0));
      this.search.addEventListener("input", () => this.highlight());
    }

    // The frame clicked spans the width; its ancestors stay above it, at
    // full width and faded; its descendants are spread out below; the rest
    // is hidden.
    zoom(i) {
      const left = this.x[i], width = this.w[i] || 1, epsilon = 1e-9;
      const above = new Set();
      for (let a = this.p[i]; a >= 0; a = this.p[a]) above.add(a);
      this.frames.forEach((g, j) => {
        let x, w;
        if (above.has(j)) {
          x = 0; w = 1;
        } else if (this.d[j] >= this.d[i] && this.x[j] >= left - epsilon &&
                   this.x[j] + this.w[j] <= left + width + epsilon) {
          x = (this.x[j] - left) / width; w = this.w[j] / width;
        } else {
          g.style.display = "none";
          return;
        }
        g.style.display = "";
        g.classList.toggle("above", above.has(j));
        this.boxes[j].setAttribute("x", (x * 100).toFixed(5) + "%");
        this.boxes[j].setAttribute("width", (w * 100).toFixed(5) + "%");
      });
    }

    highlight() {
      const text = this.search.value.trim().toLowerCase();
      const hit = this.names.map(name => text !== "" && name.includes(text));
      // Bytes of matching frames, each counted once: not again under a
      // matching ancestor (frames come parents first).
      const under = [];
      let count = 0, bytes = 0;
      this.frames.forEach((g, i) => {
        g.classList.toggle("match", hit[i]);
        under[i] = this.p[i] >= 0 && (hit[this.p[i]] || under[this.p[i]]);
        if (hit[i]) {
          count++;
          if (!under[i]) bytes += this.bytes[i];
        }
      });
      const share = this.bytes[0] ? (bytes * 100 / this.bytes[0]).toFixed(1) : "0";
      const frames = count === 1 ? "1 frame matches" : `${count} frames match`;
      this.matches.textContent = text ? `${frames}: ${bytes.toLocaleString("en-US")} ${this.unit}, ${share}%` : "";
    }
  }

  document.querySelectorAll(".flame-graph").forEach(figure => new Flame(figure));
})();

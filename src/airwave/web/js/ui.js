// Small DOM helpers shared by the views.

/** h("button.primary", {onclick}, "Play"): an element with attributes, properties and children. */
export function h(spec, attrs, ...children) {
  if (attrs === null || typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs)) {
    if (attrs !== undefined && attrs !== null) children.unshift(attrs);
    attrs = {};
  }
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.className = classes.join(" ");
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "className") el.className = value;
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** The URL of the picture in `art` closest to `size` px (at least it, when there is one). */
export function artUrl(art, size = 500) {
  if (!art || !art.length) return "";
  const sorted = [...art].sort((a, b) => a.size - b.size);
  return (sorted.find((a) => a.size >= size) || sorted[sorted.length - 1]).url;
}

/** Every size of `art` as a `srcset` (width descriptors): the browser takes the one the drawn size
 * and the screen's pixel density need, never an upscaled one when a bigger size exists. */
export function artSrcset(art) {
  if (!art || !art.length) return "";
  return [...art].sort((a, b) => a.size - b.size).map((a) => `${a.url} ${a.size}w`).join(", ");
}

/** Drawn sizes of covers (the CSS's), for `sizes`: tiles and station cards grow with the grid. */
export const DRAWN = {
  tile: "(max-width: 760px) 45vw, 13rem",
  head: "(max-width: 760px) 7rem, 10rem",
  row: "3rem",
  result: "2.6rem",
  now: "(max-width: 760px) 20rem, 32rem",
  bar: "56px",
};

export function cover(art, size, label = "", sizes = null) {
  const url = artUrl(art, size);
  if (!url) return h("div.cover.cover-empty", { role: label ? "img" : null, "aria-label": label || null }, icon("note"));
  return h("img.cover", { src: url, srcset: artSrcset(art), sizes: sizes || `${size}px`, alt: label, loading: "lazy", width: size, height: size });
}

export function formatTime(seconds) {
  if (!isFinite(seconds) || seconds < 0) seconds = 0;
  const s = Math.floor(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

export function toast(message, kind = "info", ms = 5000) {
  const box = document.getElementById("toasts");
  const item = h(`div.toast.toast-${kind}`, message);
  box.append(item);
  setTimeout(() => item.remove(), ms);
  return item;
}

/** A modal <dialog> that resolves with the value of the button pressed (or null on Escape). */
export function dialog(title, body, buttons) {
  return new Promise((resolve) => {
    const heading = h("h2", { id: `dlg-${Date.now()}` }, title);
    const el = h("dialog.dialog", { "aria-labelledby": heading.id },
      heading, body,
      h("div.actions", buttons.map(([label, value, cls]) =>
        h(`button${cls ? "." + cls : ""}`, { type: "button", onclick: () => { el.close(); resolve(value); } }, label))));
    el.addEventListener("cancel", () => resolve(null));
    el.addEventListener("close", () => setTimeout(() => el.remove(), 0));
    document.body.append(el);
    el.showModal();
  });
}

export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** A labelled form field. */
export function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  const hintEl = hint ? h("small.hint", { id: `${id}-hint` }, hint) : null;
  if (hintEl) input.setAttribute("aria-describedby", hintEl.id);
  return h("div.field", h("label", { for: id }, label), input, hintEl);
}

export function errorText(err, fallback = "Something went wrong.") {
  if (!err) return fallback;
  return err.message || fallback;
}

const ICONS = {
  play: "M8 5v14l11-7z",
  pause: "M6 5h4v14H6zM14 5h4v14h-4z",
  skip: "M5 5v14l9-7zM15 5h3v14h-3z",
  up: "M2 21h4V9H2zm20-11a2 2 0 0 0-2-2h-6.3l1-4.6v-.3a1.5 1.5 0 0 0-.5-1L13.1 1 7.6 6.6A2 2 0 0 0 7 8v11a2 2 0 0 0 2 2h9a2 2 0 0 0 1.8-1.2l3-7.1.2-.7z",
  down: "M22 3h-4v12h4zM2 14a2 2 0 0 0 2 2h6.3l-1 4.6v.3a1.5 1.5 0 0 0 .5 1l1.1 1.1 5.5-5.6A2 2 0 0 0 17 16V5a2 2 0 0 0-2-2H6a2 2 0 0 0-1.8 1.2l-3 7.1L1 12z",
  sun: "M12 7a5 5 0 1 0 0 10 5 5 0 0 0 0-10zM11 1h2v3h-2zM11 20h2v3h-2zM1 11h3v2H1zM20 11h3v2h-3zM4.2 5.6l1.4-1.4 2.1 2.1-1.4 1.4zM16.3 17.7l1.4-1.4 2.1 2.1-1.4 1.4zM4.2 18.4l2.1-2.1 1.4 1.4-2.1 2.1zM16.3 6.3l2.1-2.1 1.4 1.4-2.1 2.1z",
  moon: "M20 15.3A8.5 8.5 0 0 1 8.7 4 8.5 8.5 0 1 0 20 15.3z",
  auto: "M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm0 2v16a8 8 0 0 1 0-16z",
  note: "M12 3v10.6A4 4 0 1 0 14 17V7h4V3z",
  volume: "M3 9v6h4l5 5V4L7 9zm13.5 3A4.5 4.5 0 0 0 14 8v8a4.5 4.5 0 0 0 2.5-4zM14 3.2v2.1a7 7 0 0 1 0 13.4v2.1a9 9 0 0 0 0-17.6z",
  expand: "M12 7.6 4.7 14.9l1.4 1.4 5.9-5.9 5.9 5.9 1.4-1.4z",
  muted: "M3 9v6h4l5 5V4L7 9zm13.6 3 2.7-2.7-1.4-1.4-2.7 2.7-2.7-2.7-1.4 1.4 2.7 2.7-2.7 2.7 1.4 1.4 2.7-2.7 2.7 2.7 1.4-1.4z",
};

/** An inline SVG icon (decorative: the button around it carries the name). */
export function icon(name) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.classList.add("svg-icon");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", ICONS[name]);
  path.setAttribute("fill", "currentColor");
  svg.append(path);
  return svg;
}

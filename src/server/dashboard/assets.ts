import { createHash } from "node:crypto";

/**
 * The dashboard's stylesheet and script, kept in this module (the build
 * copies no other files) and served from /assets/ with an ETag. No build
 * step and no framework: the pages are whole without the script, which only
 * follows /events and patches what changed in place.
 */
const CSS = `
:root { --fg: #1b1f24; --muted: #535c66; --bg: #f4f6f8; --card: #fff; --line: #d5dbe1; --accent: #0b5cad; --focus: #f5a623; --bad: #a4262c; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -10000px; top: 0; }
.skip:focus { left: .5rem; top: .5rem; background: #fff; color: var(--accent); padding: .4rem .6rem; z-index: 10; }
/* An element with the hidden attribute stays hidden whatever display a class gives it (.hint is display: block). */
[hidden] { display: none !important; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
header.top { display: flex; flex-wrap: wrap; align-items: center; gap: .4rem 1.2rem; padding: .6rem 1rem; background: #15212f; color: #fff; }
header.top a { color: #fff; }
header.top .brand { font-weight: 700; text-decoration: none; }
header.top nav ul { display: flex; flex-wrap: wrap; gap: .2rem 1rem; list-style: none; margin: 0; padding: 0; }
header.top nav a[aria-current="page"] { text-decoration: underline; text-underline-offset: 4px; text-decoration-thickness: 2px; }
header.top nav a:not([aria-current]) { text-decoration: none; }
header.top .who { margin-left: auto; display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; }
header.top .who button { color: #fff; border-color: #fff; background: transparent; padding: .2rem .6rem; }
main { max-width: 74rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.4rem; margin: .2rem 0 1rem; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 0 0 .75rem; }
h3 { font-size: 1rem; margin: 0 0 .4rem; }
section.panel { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem; margin: 0 0 1rem; min-width: 0; }
.live { font-size: .85rem; color: var(--muted); margin: 0 0 .6rem; }
.muted { color: var(--muted); }
.notice { border-left: 4px solid var(--accent); background: #eaf3fc; padding: .6rem .8rem; margin: 0 0 1rem; }
.error { border-left: 4px solid var(--bad); background: #fdecea; padding: .6rem .8rem; margin: 0 0 1rem; overflow-wrap: anywhere; }
.error p, .notice p { margin: 0; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: .45rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
th { font-size: .85rem; color: var(--muted); }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.scroll { overflow-x: auto; }
.state { display: inline-block; padding: .05rem .55rem; border-radius: 999px; font-size: .85rem; font-weight: 600; background: #e6e9ed; color: #2b3138; white-space: nowrap; }
.state-succeeded { background: #d7f0df; color: #0b5226; }
.state-failed, .state-unknown_submission, .state-expired { background: #fbdedd; color: #7f1a15; }
.state-submitting, .state-running, .state-capturing { background: #dbe8fa; color: #0a4482; }
.state-cancelled { background: #ececec; color: #4a4a4a; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: flex-end; margin: 0 0 1rem; }
form.filters .field { margin: 0; }
label, .label { display: block; font-weight: 600; font-size: .9rem; margin-bottom: .2rem; }
.hint { display: block; font-size: .85rem; color: var(--muted); margin-top: .15rem; }
input, select, textarea, button { font: inherit; }
input, select, textarea { padding: .4rem .5rem; border: 1px solid #8b95a1; border-radius: 6px; background: #fff; color: var(--fg); max-width: 100%; }
input[type="text"], input[type="search"], input[type="password"], input[type="number"], select { width: 100%; }
form.filters input, form.filters select { width: auto; }
textarea { width: 100%; min-height: 8rem; font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .9rem; }
button { padding: .45rem .9rem; border-radius: 6px; border: 1px solid var(--accent); background: #fff; color: var(--accent); cursor: pointer; font-weight: 600; }
button.primary { background: var(--accent); color: #fff; }
button.danger { border-color: var(--bad); color: var(--bad); }
button:disabled { opacity: .5; cursor: not-allowed; }
.field { margin-bottom: .8rem; min-width: 0; }
.row { display: flex; flex-wrap: wrap; gap: 0 1rem; }
.row > .field { flex: 1 1 11rem; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.pager { margin: .75rem 0 0; }
dl.facts { display: grid; grid-template-columns: minmax(7rem, max-content) minmax(0, 1fr); gap: .35rem 1rem; margin: 0; }
dl.facts dt { font-weight: 600; color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.columns { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 1rem; align-items: start; }
.outputs { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 18rem), 1fr)); gap: 1rem; }
figure { margin: 0; }
td.thumb-cell { width: 4.5rem; }
img.thumb, video.thumb { max-width: 64px; max-height: 64px; border-radius: 4px; }
.durations { font-variant-numeric: tabular-nums; }
progress { width: 100%; height: 1rem; }
ul.failures { list-style: none; margin: 0; padding: 0; }
ul.failures li { padding: .4rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
ul.failures p { margin: .2rem 0 0; }
figcaption { font-size: .85rem; color: var(--muted); margin-top: .3rem; }
img, video { display: block; max-width: 100%; height: auto; background: #d9dde2; border-radius: 6px; }
ol.timeline { list-style: none; margin: 0; padding: 0 0 0 .2rem; border-left: 2px solid var(--line); }
ol.timeline li { position: relative; padding: 0 0 .8rem 1rem; overflow-wrap: anywhere; }
ol.timeline li::before { content: ""; position: absolute; left: -7px; top: .45rem; width: 12px; height: 12px; border-radius: 50%; background: var(--accent); }
ol.timeline p { margin: .15rem 0 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: .85rem; background: #f0f2f4; padding: .5rem; border-radius: 6px; margin: .3rem 0 0; }
.providers { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 17rem), 1fr)); gap: .75rem; }
.provider { border: 1px solid var(--line); border-radius: 6px; padding: .6rem .75rem; min-width: 0; overflow-wrap: anywhere; }
.provider h3 { display: flex; justify-content: space-between; gap: .5rem; }
.provider ul { margin: .2rem 0 .4rem; padding-left: 1.1rem; }
.provider .halt { color: var(--bad); font-weight: 600; }
meter { width: 100%; height: .9rem; }
.quote { border: 1px solid var(--accent); border-radius: 6px; padding: .6rem .8rem; margin: 0 0 .8rem; background: #f3f8fd; }
svg.chart { display: block; width: 100%; max-width: 36rem; height: auto; }
svg.chart text { font-size: 11px; fill: var(--muted); }
svg.chart .axis { stroke: var(--line); }
.legend { display: flex; flex-wrap: wrap; gap: .3rem 1rem; list-style: none; padding: 0; margin: .4rem 0; font-size: .85rem; }
.swatch { display: inline-block; width: .8rem; height: .8rem; border-radius: 2px; margin-right: .3rem; vertical-align: -1px; }
.estimated { opacity: .35; }
.p-a { fill: #7b3fa0; background: #7b3fa0; } .p-b { fill: #c2571a; background: #c2571a; } .p-c { fill: #1f7a8c; background: #1f7a8c; }
.p-d { fill: #2f6fd6; background: #2f6fd6; } .p-e { fill: #a87a08; background: #a87a08; } .p-f { fill: #3a8a3a; background: #3a8a3a; }
.login { max-width: 26rem; margin: 2rem auto; }
@media (max-width: 44rem) {
  main { padding: .6rem; }
  section.panel { padding: .75rem; }
  .columns { grid-template-columns: minmax(0, 1fr); }
  dl.facts { grid-template-columns: minmax(0, 1fr); gap: 0; }
  dl.facts dd { margin-bottom: .45rem; }
  header.top .who { margin-left: 0; }
  table.jobs thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.jobs, table.jobs tbody, table.jobs tr, table.jobs td { display: block; width: 100%; }
  table.jobs tr { border: 1px solid var(--line); border-radius: 6px; margin-bottom: .6rem; padding: .25rem 0; }
  table.jobs td { border: 0; padding: .15rem .6rem; display: flex; gap: .6rem; }
  table.jobs td::before { content: attr(data-label); flex: 0 0 5.5rem; font-weight: 600; color: var(--muted); }
  table.jobs td.num { text-align: left; }
}
`;

/** Follows /events and patches rows, job parts and panels in place; marks a quote stale when its form changes. */
const JS = `
(function () {
  "use strict";
  var main = document.getElementById("main");
  var status = document.getElementById("live");
  var announcer = document.getElementById("announce");

  function nodesOf(text) {
    var template = document.createElement("template");
    template.innerHTML = text;
    return template.content;
  }
  function say(text) { if (status) status.textContent = text; }
  function announce(text) { if (announcer && text) announcer.textContent = text; }

  function patchRow(data) {
    var body = document.querySelector("table.jobs tbody");
    if (!body) return;
    var existing = null;
    var rows = body.querySelectorAll("tr[data-job]");
    for (var index = 0; index < rows.length; index++) if (rows[index].getAttribute("data-job") === data.id) existing = rows[index];
    var fresh = nodesOf(data.row).firstElementChild;
    if (!fresh) return;
    if (existing) {
      var hadFocus = existing.contains(document.activeElement);
      existing.replaceWith(fresh);
      if (hadFocus) { var link = fresh.querySelector("a"); if (link) link.focus(); }
    } else if (data.matches) {
      body.insertBefore(fresh, body.firstChild);
      var empty = document.getElementById("no-jobs");
      if (empty) empty.remove();
    } else return;
    announce(data.announce);
  }

  function patchParts(parts) {
    Object.keys(parts).forEach(function (name) {
      var target = document.querySelector('[data-part="' + name + '"]');
      if (!target || target.getAttribute("data-version") === parts[name].version) return;
      // Only what changed is replaced: a video being watched is left alone while the timeline grows.
      target.replaceChildren(nodesOf(parts[name].html));
      target.setAttribute("data-version", parts[name].version);
    });
  }

  function follow(url) {
    if (typeof EventSource === "undefined") return;
    var source = new EventSource(url);
    source.addEventListener("open", function () { say("Live: changes appear as they happen."); });
    source.addEventListener("error", function () {
      say(source.readyState === EventSource.CLOSED ? "Live updates stopped: reload the page for the latest state." : "Reconnecting for live updates…");
    });
    source.addEventListener("job", function (message) {
      var data = JSON.parse(message.data);
      if (data.row !== undefined) patchRow(data);
      if (data.parts) { patchParts(data.parts); announce(data.announce); }
    });
    source.addEventListener("panels", function (message) {
      var data = JSON.parse(message.data);
      Object.keys(data).forEach(function (name) {
        var target = document.querySelector('[data-panel="' + name + '"]');
        if (target) target.replaceChildren(nodesOf(data[name]));
      });
    });
  }

  // A quote is for the request as it was quoted: once a field changes, sending waits for a new quote.
  var quoted = document.querySelectorAll("form[data-quoted]");
  for (var index = 0; index < quoted.length; index++) {
    (function (form) {
      function stale() {
        var send = form.querySelector('button[value="send"]');
        if (!send || send.disabled) return;
        send.disabled = true;
        var note = form.querySelector(".stale");
        if (note) note.hidden = false;
      }
      form.addEventListener("input", stale);
      form.addEventListener("change", stale);
    })(quoted[index]);
  }

  // "Copy": the text of the element the button names, to the clipboard; said beside the button either way.
  var copiers = document.querySelectorAll("button[data-copy]");
  for (var copier = 0; copier < copiers.length; copier++) {
    (function (button) {
      button.addEventListener("click", function () {
        var source = document.getElementById(button.getAttribute("data-copy"));
        var said = button.parentNode.querySelector(".copied");
        if (!source) return;
        var text = source.value !== undefined ? source.value : source.textContent;
        function tell(words) { if (said) { said.textContent = words; said.hidden = false; } }
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(text).then(function () { tell("Copied."); }, function () { source.select && source.select(); tell("Selected: copy it with your keyboard."); });
        } else {
          if (source.select) source.select();
          tell("Selected: copy it with your keyboard.");
        }
      });
    })(copiers[copier]);
  }

  var url = main && main.getAttribute("data-events");
  if (url) follow(url);
})();
`;

function etagOf(text: string): string {
  return `"${createHash("sha256").update(text).digest("base64url").slice(0, 27)}"`;
}

export interface Asset {
  body: string;
  contentType: string;
  etag: string;
}

export const ASSETS: Readonly<Record<string, Asset>> = {
  "dashboard.css": { body: CSS, contentType: "text/css; charset=utf-8", etag: etagOf(CSS) },
  "dashboard.js": { body: JS, contentType: "text/javascript; charset=utf-8", etag: etagOf(JS) },
};

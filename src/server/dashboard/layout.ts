import { html, type Html } from "./html.js";
import type { Session } from "./session.js";
import { ASSETS } from "./assets.js";

export type Section = "batch" | "jobs" | "new" | "login" | "job" | "error";

export interface PageOptions {
  title: string;
  session: Session | null;
  section: Section;
  body: Html;
  /** The /events address this page follows (its script patches the page from it). */
  events?: string;
}

/** Every page: a skip link, the navigation, the live-update status and the page's own body. */
export function pageOf(options: PageOptions): Html {
  const { session, section } = options;
  const current = (name: Section) => (section === name ? html` aria-current="page"` : "");
  const caller = session?.caller;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · mediagate</title>
<link rel="stylesheet" href="/assets/dashboard.css?v=${ASSETS["dashboard.css"]!.etag.slice(1, 9)}">
<script src="/assets/dashboard.js?v=${ASSETS["dashboard.js"]!.etag.slice(1, 9)}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/">mediagate</a>
  ${
    session
      ? html`<nav aria-label="Dashboard">
    <ul>
      <li><a href="/"${current("jobs")}>Jobs</a></li>
      ${caller!.readOnly ? "" : html`<li><a href="/new"${current("new")}>New job</a></li>`}
      <li><a href="/#providers">Providers</a></li>
      <li><a href="/#spend">Spend</a></li>
    </ul>
  </nav>
  <div class="who">
    <span>${caller!.name}${caller!.admin ? " (admin)" : ""}${caller!.readOnly ? " (read-only)" : ""}</span>
    ${
      session.via === "cookie"
        ? html`<form method="post" action="/logout"><input type="hidden" name="form_token" value="${session.formToken}"><button type="submit">Log out</button></form>`
        : ""
    }
  </div>`
      : ""
  }
</header>
<main id="main"${options.events ? html` data-events="${options.events}"` : ""}>
${options.events ? html`<p class="live" id="live" role="status">Reload the page for the latest state.</p>` : ""}
<p class="visually-hidden" id="announce" aria-live="polite"></p>
${options.body}
</main>
</body>
</html>
`;
}

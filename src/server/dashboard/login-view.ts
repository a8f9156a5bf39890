import { html, type Html } from "./html.js";

/** A local path to return to after logging in; anything else (another host, `//host`, a scheme) goes to `/`. */
export function localPath(next: string | null | undefined): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return "/";
  return next;
}

export function loginPageBody(options: { next: string; error?: string }): Html {
  return html`<section class="panel login" aria-labelledby="login-title">
<h1 id="login-title">Log in</h1>
${options.error ? html`<div class="error" role="alert"><p>${options.error}</p></div>` : ""}
<form method="post" action="/login">
<input type="hidden" name="next" value="${localPath(options.next)}">
<div class="field"><label for="token">API token</label>
<input id="token" name="token" type="password" required autocomplete="current-password" spellcheck="false" aria-describedby="token-hint">
<span class="hint" id="token-hint">A token from <code>mediagate token create NAME</code> (it starts with mg_). It is kept in an HttpOnly cookie until you log out or close the browser.</span></div>
<button type="submit" class="primary">Log in</button>
</form>
</section>`;
}

export function errorPageBody(title: string, message: string): Html {
  return html`<h1>${title}</h1><div class="error" role="alert"><p>${message}</p></div><p><a href="/">Back to the jobs</a></p>`;
}

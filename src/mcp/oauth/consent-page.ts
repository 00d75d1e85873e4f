// The consent page of /oauth/authorize: the one step of the flow a person takes. It shows who asks (the client's
// registered name and where the answer goes) and asks for the operator's consent secret; the request's
// parameters travel in hidden fields to the POST that decides.

const esc = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

export interface ConsentView {
  clientName: string;
  clientId: string;
  redirectUri: string;
  /** The authorization request's parameters, carried over to the decision. */
  fields: Record<string, string>;
  /** Shown above the form after a refused attempt. */
  error?: string;
}

export function consentPage(v: ConsentView): string {
  const hidden = Object.entries(v.fields)
    .map(([k, val]) => `<input type="hidden" name="${esc(k)}" value="${esc(val)}">`)
    .join('\n      ');
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="referrer" content="no-referrer">
  <title>Allow access to the map server's MCP tools?</title>
  <style>
    body { font: 16px/1.5 system-ui, sans-serif; max-width: 34rem; margin: 3rem auto; padding: 0 1rem; }
    .error { color: #b00020; }
    code { word-break: break-all; }
    input[type=password] { width: 100%; padding: .4rem; font: inherit; }
    button { margin-top: 1rem; padding: .4rem 1.2rem; font: inherit; }
  </style>
</head>
<body>
  <h1>Allow access?</h1>
  <p><strong>${esc(v.clientName)}</strong> (client <code>${esc(v.clientId)}</code>) asks to use this map server's MCP tools.
  The answer goes to <code>${esc(v.redirectUri)}</code>.</p>
  <p>Only the operator of this server can allow it: enter the consent secret from its configuration.</p>
  ${v.error ? `<p class="error" role="alert">${esc(v.error)}</p>` : ''}
  <form method="post" action="authorize">
      ${hidden}
      <label>Consent secret <input type="password" name="consent_secret" autocomplete="off" required autofocus></label>
      <button type="submit">Allow</button>
  </form>
</body>
</html>
`;
}

/** A page for a request that cannot be answered by redirecting (unknown client, unregistered redirect URI). */
export function errorPage(title: string, detail: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title></head>
<body><h1>${esc(title)}</h1><p>${esc(detail)}</p></body></html>
`;
}

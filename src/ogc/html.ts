// The HTML form of an OGC API document (`f=html`, or a browser's Accept): its title, its links as anchors, and
// the document itself, so a person can walk the API in a browser. Everything from the document is escaped.

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

interface LinkLike {
  href?: unknown;
  rel?: unknown;
  type?: unknown;
  title?: unknown;
  templated?: unknown;
}

/** Only http(s) hrefs become anchors: a document's links are the service's own, but escaping is not validation. */
const linkable = (href: string) => /^https?:\/\//i.test(href);

export function htmlPage(title: string, doc: unknown): string {
  const links = (doc && typeof doc === 'object' && Array.isArray((doc as { links?: unknown }).links) ? (doc as { links: LinkLike[] }).links : []).filter(
    (l) => typeof l?.href === 'string',
  );
  // A target linked under several relation names (the landing page names conformance and collections both as
  // OGC's URIs and as Part 1's short names, for QGIS) is one item, its names together.
  const merged = new Map<string, { link: LinkLike; rels: string[] }>();
  for (const l of links) {
    const key = `${String(l.href)} ${String(l.type ?? '')}`;
    const seen = merged.get(key);
    if (seen) {
      if (l.rel !== undefined && !seen.rels.includes(String(l.rel))) seen.rels.push(String(l.rel));
    } else merged.set(key, { link: l, rels: l.rel === undefined ? [] : [String(l.rel)] });
  }
  const items = [...merged.values()]
    .map(({ link: l, rels }) => {
      const href = String(l.href);
      const label = escapeHtml(String(l.title ?? l.rel ?? href));
      const meta = escapeHtml(`${rels.join(' ')}${l.type ? `, ${String(l.type)}` : ''}`);
      const anchor = linkable(href) && l.templated !== true ? `<a href="${escapeHtml(href)}">${label}</a>` : `${label} <code>${escapeHtml(href)}</code>`;
      return `<li>${anchor} <small>(${meta})</small></li>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}pre{background:#f4f4f4;padding:1em;overflow:auto}small{color:#666}</style></head>
<body>
<h1>${escapeHtml(title)}</h1>
<ul>
${items}
</ul>
<pre>${escapeHtml(JSON.stringify(doc, null, 2))}</pre>
</body>
</html>
`;
}

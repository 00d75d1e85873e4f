// Which of this service's sources a style source URL names: a pure reading of the URL, so the style registry
// (below the state) and the style rewriting (above it) share it.

/**
 * The source id of a style source URL that names a source of this service: `mbtiles://ID`, `pmtiles://ID` or
 * `source://ID` (tileserver-gl's `mbtiles://{ID}` spelling is accepted too), else undefined. ID may be a source,
 * a named composite or an ad-hoc composite `a+b`.
 */
export function sourceRef(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  const m = /^(?:mbtiles|pmtiles|source):\/\/(.+)$/.exec(url);
  if (!m) return undefined;
  const id = m[1].replace(/^\{(.*)\}$/, '$1');
  return id === '' ? undefined : id;
}

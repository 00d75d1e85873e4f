// What the tests of OGC API - Features writes share: a request with a GeoJSON body against a running server,
// answered with its status, headers and text, and the web-mercator tile a written point falls in.

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: () => any;
}

/** `method` on `base` + `p`; a body (text as given, else JSON) is sent as GeoJSON unless `headers` say otherwise. */
export async function call(base: string, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const init: RequestInit = { method, headers: { ...(body !== undefined ? { 'content-type': 'application/geo+json' } : {}), ...headers }, signal: AbortSignal.timeout(30_000) };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(`${base}${p}`, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

/** The tile of a lon/lat at zoom z (web mercator, written here rather than taken from the code under test). */
export function tileOf(lon: number, lat: number, z: number) {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return { z, x: Math.floor(((lon + 180) / 360) * n), y: Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n) };
}

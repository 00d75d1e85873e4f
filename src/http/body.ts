// Request bodies read whole, with a bound: the JSON bodies of the spatial query and of the POST static map.
import type { Context } from 'hono';

/** Reads at most `maxBytes` of the request body as UTF-8; undefined as soon as it is longer. */
export async function readBoundedText(c: Context, maxBytes: number): Promise<string | undefined> {
  const stream = c.req.raw.body;
  if (!stream) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

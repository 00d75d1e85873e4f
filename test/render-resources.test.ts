// What a resource the renderer cannot get becomes (src/render/resources.ts): something that draws nothing, so a
// missing tile or image never hangs a render and never paints over the map.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import sharp from 'sharp';
import { emptyResource } from '../src/render/resources.js';

test('a missing image becomes one fully transparent pixel; a missing vector tile, empty; a missing sprite index, empty JSON', async () => {
  for (const name of ['/data/x/1/2/3.png', '/data/x/1/2/3.jpg', '/data/x/1/2/3.webp', '/styles/s/sprite.png']) {
    const r = emptyResource(name, 404);
    assert.equal(r.status, 200);
    const { data, info } = await sharp(r.body).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    assert.equal(info.width * info.height, 1, name);
    assert.equal(data[3], 0, `${name}: alpha 0, got ${[...data]}`);
  }
  assert.equal(emptyResource('/data/x/1/2/3.pbf', 502).body.byteLength, 0);
  assert.equal(Buffer.from(emptyResource('/styles/s/sprite@2x.json', 404).body).toString(), '{}');
  assert.equal(emptyResource('/data/x.json', 404).status, 404);
});

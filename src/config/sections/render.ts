// `[render]`: server-side rendering of raster style tiles, static maps and social cards.
import * as v from 'valibot';
import { nonEmpty, threadCount } from './common.js';
import { section } from './section.js';

/** Server-side rendering (raster style tiles, static maps, social cards); see docs/rendering.md. */
export const RenderSchema = v.object({
  /** "auto": MapLibre Native when its module loads, else headless Chromium when a browser is found. */
  backend: v.optional(v.picklist(['auto', 'native', 'chromium']), 'auto'),
  /** Renderers (Chromium pages, native maps) of this process; default: its share of the cores (config/sizing.ts). */
  pool_size: v.optional(threadCount),
  /** Chromium only: pages (renderers) per browser. The pages of a browser share its one GPU process (measured: docs/rendering.md). */
  pages_per_browser: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(64)), 2),
  /** A render running longer fails (503) and its renderer is destroyed and replaced. */
  timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(600_000)), 30_000),
  /** Renders waiting for a renderer; beyond this, 503 with Retry-After. */
  max_queue: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100_000)), 256),
  /** Longest wait for a renderer; a render still waiting then is dropped and answered 503 with Retry-After. */
  queue_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(600_000)), 10_000),
  /** Largest image a request may ask for, in device pixels (width x height x scale²); beyond it 400. */
  max_pixels: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000_000)), 4096 * 4096),
  /** A renderer is recycled (browser or native map restarted) after this many renders. */
  max_renders: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 2000),
  /**
   * Raster style tiles are rendered in blocks of metatile x metatile tiles and cut. "auto": the tiles asked for
   * together are drawn in one frame (a lone tile as a 2x2 metatile, a view's tiles up to 4x4; docs/rendering.md).
   */
  metatile: v.optional(v.union([v.literal('auto'), v.picklist([1, 2, 4])]), 'auto'),
  /**
   * Work nobody waits for (`tileserver-ts seed`, background re-renders of expired tiles) is drawn in blocks of up
   * to bulk_metatile x bulk_metatile tiles: larger frames share a frame's fixed cost among more tiles (measured:
   * docs/rendering.md, "Bulk frames"; 4 by measurement: as cheap per tile as 8, in two thirds of the memory). 1
   * draws each such tile alone.
   */
  bulk_metatile: v.optional(v.picklist([1, 2, 4, 8]), 4),
  /**
   * Largest edge in device pixels of a bulk frame, buffer included; a larger block is drawn as smaller ones (8x8 of
   * 512 px tiles at @2x is 8320 px: drawn as 4x4). Capped by the GL stacks' frame limit, 8192.
   */
  bulk_max_frame: v.optional(v.pipe(v.number(), v.integer(), v.minValue(256), v.maxValue(8192)), 8192),
  /** Pixels rendered around a metatile and cut away, so labels at tile edges are placed as their neighbours place them. */
  tile_buffer: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(256)), 32),
  /** Rendered tiles kept in memory by each process. */
  memory_cache_mb: v.optional(v.pipe(v.number(), v.minValue(0)), 64),
  /** Rendered tiles kept on disk under [cache] dir, shared by all processes; 0 disables the disk cache. */
  disk_cache_mb: v.optional(v.pipe(v.number(), v.minValue(0)), 1024),
  /**
   * zlib level of rendered PNGs, sharp's and the Chromium page's (libdeflate there): 3 costs about half the CPU of 6 for a
   * few percent more bytes (docs/rendering.md, "Encoding").
   */
  png_compression: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(9)), 3),
  /**
   * zlib level of the PNG tiles the Chromium page writes for bulk renders (seeding, which asks with the bulk
   * priority): an archive is written once and read many times, so bytes weigh more than CPU there.
   */
  seed_png_compression: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(9)), 8),
  jpeg_quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), 85),
  webp_quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), 85),
  /** AVIF quality when a request gives none (libheif/aom through sharp; its own default is 50). */
  avif_quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), 50),
  /**
   * Chromium only: the software GL stack under WebGL. "auto" takes the fastest that passes its canary frame here:
   * lavapipe (Mesa's Vulkan rasteriser), then egl (Mesa's llvmpipe through EGL), then SwiftShader (docs/rendering.md).
   */
  gl: v.optional(v.picklist(['auto', 'lavapipe', 'egl', 'swiftshader']), 'auto'),
  /**
   * With several worker processes, each 4x4 block of tiles is drawn by one owner process; the others forward to it
   * (its pages keep the neighbourhood's parsed source tiles). Off: every process draws what it is asked for.
   */
  owner_routing: v.optional(v.boolean(), true),
  /**
   * Who encodes rendered tiles. "browser": the Chromium page cuts and encodes each tile of a frame with the browser's
   * own encoders, so only encoded bytes leave it (the native backend falls back to sharp); "sharp": the frame's raw
   * pixels come to Node and sharp cuts and encodes them (`png_compression` applies). docs/rendering.md, "Encoding".
   */
  tile_encoder: v.optional(v.picklist(['browser', 'sharp']), 'browser'),
  /** Chromium only: in pitch-0 frames draw fill-extrusion layers as flat fills of their lit roof colour (much faster). */
  flat_extrusions: v.optional(v.boolean(), true),
  /** The Chromium (or Chrome) executable; default: CHROMIUM_PATH, then the usual Debian and Chrome locations. */
  chromium_path: v.optional(nonEmpty),
  /** Static maps draw the attribution of the style's sources in the bottom-right corner (`attribution=false` per request). */
  static_attribution: v.optional(v.boolean(), true),
  /** Hosts (`name` or `name:port`) whose http(s) images static-map markers may show; no other host is ever contacted. */
  marker_hosts: v.optional(
    v.array(v.pipe(nonEmpty, v.check((h) => /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/.test(h), 'a host name or host:port, without scheme or path'))),
    [],
  ),
  /** Largest marker image (from a marker host or the files directory), bytes; a larger one is refused (400). */
  marker_max_bytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16 * 1024 * 1024)), 256 * 1024),
  /** Longest wait for a marker image from a marker host; a slower one is refused (400). */
  marker_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(60_000)), 3000),
  /**
   * An expired tile answered from its old image carries `Cache-Control: max-age` of this many seconds (mod_tile's
   * dirty duration): long enough to spare the server a repeat, short enough for the client to see the fresh tile soon.
   */
  stale_max_age_seconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(3600)), 15),
  /**
   * When an expired tile is drawn again: "request" on its next request (answered from the old image meanwhile);
   * "eager" also right after the expiry, in the background, for the variants this process served recently
   * (docs/rendering.md, "Expired tiles").
   */
  rerender_expired: v.optional(v.picklist(['request', 'eager']), 'request'),
  /** Eager re-rendering reaches tiles up to this zoom (deeper tiles wait for their next request). */
  rerender_max_zoom: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(24)), 16),
  /** Expired tiles waiting for an eager re-render; an expired tile beyond it is dropped (counted) and waits for its next request. */
  dirty_queue_size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000)), 10_000),
  /**
   * Renders waiting for a renderer in this process at or above which an expired tile is answered from its old
   * image without being drawn again (the load shed first); 0 never sheds.
   */
  stale_threshold: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100_000)), 64),
});

export const render = section(v.optional(RenderSchema, {}));

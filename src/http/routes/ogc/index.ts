// OGC API under /ogc: landing page and conformance, tile matrix sets, collections with their tilesets and
// tiles, rendered map tiles of styles, and features of PostGIS tables and data files, and feature writes on writable tables. Absent while server.disable_ogc is set.
import type { ServerContext } from '../../context.js';
import type { Router } from '../../router.js';
import { registerOgcCoreRoutes } from './core.js';
import { registerOgcEditRoutes } from './edits.js';
import { registerOgcFeatureRoutes } from './features.js';
import { registerOgcTileRoutes } from './tiles.js';

export function registerOgcRoutes(r: Router, ctx: ServerContext): void {
  registerOgcCoreRoutes(r, ctx);
  // Matched in the route table's order (src/routes/public-routes.ts): items and queryables before the tilesets.
  registerOgcFeatureRoutes(r, ctx);
  registerOgcEditRoutes(r, ctx);
  registerOgcTileRoutes(r, ctx);
}

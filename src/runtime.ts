// Facts about this process shared by the render and HTTP areas. They live below both (as log.ts and version.ts
// do) so that rendering never imports from the HTTP area that sits above it.

/** Facts about this process that /ping reports and later capabilities (renderer, metrics) fill in. */
export interface RuntimeStatus {
  /** A renderer backend is started and answering. */
  rendererEnabled: boolean;
  /** Name of the renderer backend in use, when one is. */
  renderer: string | undefined;
  /** The static-image and social-card routes are mounted. */
  renderRoutesMounted: boolean;
  scrapeListenerActive: boolean;
  ogcEnabled: boolean;
}

/** The Hono `env` of a request a renderer makes in-process through `app.fetch` (src/render/resources.ts). */
export interface RenderRequestEnv {
  renderBase: string;
}

// Facts about this process shared by the render and HTTP areas. They live below both (as log.ts and version.ts
// do) so that rendering never imports from the HTTP area that sits above it.

export type RendererState = 'idle' | 'starting' | 'ready' | 'unavailable';

/** Facts about this process that /ping reports and later capabilities (renderer, metrics) fill in. */
export interface RuntimeStatus {
  /** A renderer backend is started and answering. */
  rendererEnabled: boolean;
  /** Name of the renderer backend in use, when one is. */
  renderer: string | undefined;
  /** The GL stack under the Chromium backend's WebGL (lavapipe, egl, swiftshader), when Chromium renders. */
  rendererGl?: string;
  /**
   * `idle` when the renderers start with the first render request (only generated styles) and none was asked
   * for yet, `starting` while renderers warm up, `ready` once one has drawn a frame, `unavailable` when none can
   * start or rendering is off (disabled, nothing to render).
   */
  rendererState: RendererState;
  /** Rendering is configured and its pool starts with the process: readiness waits for it. */
  rendererWanted: boolean;
  /** What the other worker processes of the cluster report as not ready (from the primary); empty alone. */
  peersNotReady: string[];
  /** The static-image and social-card routes are mounted. */
  renderRoutesMounted: boolean;
  scrapeListenerActive: boolean;
}

/** The Hono `env` of a request a renderer makes in-process through `app.fetch` (src/render/resources.ts). */
export interface RenderRequestEnv {
  renderBase: string;
}

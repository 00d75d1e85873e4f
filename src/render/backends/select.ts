// Which backend renders: `render.backend = "auto" | "native" | "chromium"`. `auto` prefers MapLibre Native
// when its module loads, then Chromium when a browser executable is found; the pool tries them in that order
// and keeps the first whose renderers start. Chromium is a candidate once per GL stack `render.gl` allows, fastest
// first: a stack whose canary frame fails is passed over for the next.
import type { RenderConfig } from '../../config/schema.js';
import type { BackendName } from '../renderer.js';
import { findChromium } from './chromium.js';
import { glCandidates, type GlStack } from './gl-stack.js';
import { loadNativeModule } from './native.js';

export interface BackendCandidate {
  backend: BackendName;
  chromiumPath: string | undefined;
  /** Chromium: the GL stack this candidate runs on (each stack of render.gl is a candidate of its own). */
  gl?: GlStack;
}

export interface BackendChoice {
  candidates: BackendCandidate[];
  /** Why each backend that was considered cannot be used. */
  reasons: string[];
}

export async function backendCandidates(cfg: RenderConfig, loadNative: () => Promise<unknown> = loadNativeModule): Promise<BackendChoice> {
  const candidates: BackendCandidate[] = [];
  const reasons: string[] = [];
  if (cfg.backend === 'auto' || cfg.backend === 'native') {
    try {
      await loadNative();
      candidates.push({ backend: 'native', chromiumPath: undefined });
    } catch (err) {
      reasons.push(`native: ${(err as Error).message}`);
    }
  }
  if (cfg.backend === 'auto' || cfg.backend === 'chromium') {
    const chromiumPath = findChromium(cfg.chromium_path);
    if (chromiumPath) for (const gl of glCandidates(cfg.gl)) candidates.push({ backend: 'chromium', chromiumPath, gl });
    else {
      reasons.push(
        cfg.chromium_path
          ? `chromium: render.chromium_path ${cfg.chromium_path} does not exist`
          : 'chromium: no browser found (install the Debian package chromium, or set render.chromium_path or CHROMIUM_PATH)',
      );
    }
  }
  return { candidates, reasons };
}

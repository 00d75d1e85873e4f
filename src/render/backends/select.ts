// Which backend renders: `render.backend = "auto" | "native" | "chromium"`. `auto` prefers MapLibre Native
// when its module loads, then Chromium when a browser executable is found; the pool tries them in that order
// and keeps the first whose renderers start.
import type { RenderConfig } from '../../config/schema.js';
import type { BackendName } from '../renderer.js';
import { findChromium } from './chromium.js';
import { loadNativeModule } from './native.js';

export interface BackendCandidate {
  backend: BackendName;
  chromiumPath: string | undefined;
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
    if (chromiumPath) candidates.push({ backend: 'chromium', chromiumPath });
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

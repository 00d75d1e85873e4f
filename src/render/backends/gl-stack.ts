// The software GL stack under Chromium's WebGL (`render.gl`). There is no GPU on a render host; Chromium's WebGL runs
// on ANGLE over one of three CPU rasterisers, measured on a 2-core machine with dense city tiles (docs/rendering.md):
// - lavapipe: ANGLE on Vulkan with Mesa's lavapipe (Debian: mesa-vulkan-drivers, libvulkan1). The fastest here:
//   GL readback about half of SwiftShader's, 1.2-1.3x the tiles per CPU-second.
// - egl: ANGLE on OpenGL through EGL with Mesa's llvmpipe, headless (no X display). Between the two.
// - swiftshader: ANGLE on SwiftShader, shipped inside Chromium itself: always there, the slowest.
// `auto` tries them fastest first; a stack is taken only when a page's canary frame passes *and* WebGL reports the
// rasteriser asked for (Chromium silently falls back to SwiftShader, or turns WebGL off, when a driver fails).
import { existsSync } from 'node:fs';

export type GlStack = 'lavapipe' | 'egl' | 'swiftshader';
export type GlSetting = GlStack | 'auto';

/**
 * Largest frame edge, in device pixels, every stack draws: SwiftShader's maximum texture and renderbuffer size
 * (lavapipe's and llvmpipe's are 16384). Bulk frames (tile-render.ts, bulkEdge) stay within it; interactive frames
 * stay within the smaller MAX_FRAME (pool-keeper.ts), which bounds a person's wait and a frame's memory.
 */
export const GL_FRAME_LIMIT = 8192;

/** Fastest first (measured here: docs/rendering.md, "GL stacks"). */
export const AUTO_ORDER: readonly GlStack[] = ['lavapipe', 'egl', 'swiftshader'];

/** Where Debian's mesa-vulkan-drivers puts lavapipe's Vulkan driver manifest. */
const LAVAPIPE_ICD = ['/usr/share/vulkan/icd.d/lvp_icd.x86_64.json', '/usr/share/vulkan/icd.d/lvp_icd.aarch64.json'];

export interface GlLaunch {
  /** Chromium switches selecting the stack. */
  args: string[];
  /** Variables added to the browser's environment. */
  env: Record<string, string>;
  /** What WebGL's unmasked renderer string must match when this stack really runs. */
  renderer: RegExp;
}

/** How to launch Chromium on a stack. `baseEnv` is the environment the browser would otherwise get. */
export function glLaunch(stack: GlStack, baseEnv: NodeJS.ProcessEnv = process.env): GlLaunch {
  switch (stack) {
    case 'lavapipe': {
      // Vulkan loads every driver it finds: point it at lavapipe alone (unless the operator chose the drivers).
      const icd = baseEnv.VK_ICD_FILENAMES ?? LAVAPIPE_ICD.find((f) => existsSync(f));
      return {
        // Without the last switch Chromium refuses WebGL2 on lavapipe as "blocklisted".
        args: ['--use-gl=angle', '--use-angle=vulkan', '--ignore-gpu-blocklist', '--disable-gpu-driver-bug-workarounds'],
        // LP_NUM_THREADS=0: lavapipe rasterises on the GPU process's own thread. Its worker threads only contend
        // with the other pages and processes for the same cores (measured faster at 0).
        env: { LP_NUM_THREADS: baseEnv.LP_NUM_THREADS ?? '0', ...(icd ? { VK_ICD_FILENAMES: icd } : {}) },
        renderer: /Vulkan.*(llvmpipe|lavapipe)/i,
      };
    }
    case 'egl':
      return {
        args: ['--use-gl=angle', '--use-angle=gl-egl', '--ignore-gpu-blocklist', '--disable-gpu-driver-bug-workarounds'],
        env: { LP_NUM_THREADS: baseEnv.LP_NUM_THREADS ?? '0' },
        renderer: /llvmpipe/i,
      };
    case 'swiftshader':
      return { args: ['--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist'], env: {}, renderer: /SwiftShader/i };
  }
}

/** The stacks a setting tries, in order. */
export function glCandidates(setting: GlSetting): GlStack[] {
  return setting === 'auto' ? [...AUTO_ORDER] : [setting];
}

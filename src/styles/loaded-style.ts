// A configured style as the service holds it (read and validated by registry.ts; generated ones by generated.ts).
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';

export type SpriteScale = 1 | 2 | 3;

/** The languages a style's labels may be asked in (language-choice.ts reads requests against them). */
export interface StyleLanguages {
  /** `all`: any tag; a set: those tags (canonical case); `off`: none. */
  offered: 'all' | ReadonlySet<string> | 'off';
  default: string | undefined;
  acceptLanguage: boolean;
}

export interface LoadedStyle {
  id: string;
  /** Display name: the config's `name`, else the style's own `name`, else the id. */
  name: string;
  /** Absolute path of the style file. */
  path: string;
  /** Folder of the style file (sprites are looked for here). */
  dir: string;
  /** The style as the file has it; never modified (see rewrite.ts for the served form). */
  style: StyleSpecification;
  /** SHA-256 (hex) of the style file's bytes (and of its built sprite sheets: caches of renders follow the icons). */
  hash: string;
  /** Absolute path of the sprite files without extension, e.g. `/…/osm-liberty`, when they were found. */
  spriteBase?: string;
  /** Sheets built from the style's `sprite_dir` (1x, 2x, 3x), held in memory; they win over files beside the style. */
  builtSprites?: ReadonlyMap<SpriteScale, { png: Buffer; json: Buffer }>;
  /** The languages its labels may be asked in (language-choice.ts); absent (generated styles): any. */
  languages?: StyleLanguages;
}

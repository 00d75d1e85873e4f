// The configured styles of one state: each `[[styles]]` file read, validated against the MapLibre style
// specification and checked against the service's sources, fonts and sprite files. A style with errors stops
// start-up (or fails the reload) with the validator's messages and the file name.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { validateStyleMin, type StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { parseLanguageTag } from '../config/language-tag.js';
import { ConfigError } from '../config/errors.js';
import type { StyleConfig } from '../config/schema.js';
import type { TileSource } from '../sources/source.js';
import { compositeMembers } from '../sources/source-ids.js';
import type { FontIndex } from './fonts.js';
import { localizeStyle, styleReadsNames } from './label-language.js';
import { styleLanguages } from './language-choice.js';
import type { LoadedStyle } from './loaded-style.js';
import { sourceRef } from './source-ref.js';
import { buildSprites } from './sprite-sheet.js';
import { findSpriteBase } from './sprites.js';

// The shape of a loaded style lives in loaded-style.ts, a leaf module the state's type can import.
export type { LoadedStyle };

/** A style that cannot be served; the message names the file. A ConfigError, so start-up reports it as one line. */
export class StyleLoadError extends ConfigError {
  override name = 'StyleLoadError';
}

export interface LoadedStyles {
  styles: ReadonlyMap<string, LoadedStyle>;
  /** Problems that do not stop the style from being served (unknown source ids, missing fonts or sprites). */
  warnings: string[];
}

/** Warnings already logged by this process, per configuration: the start-up probe and the server build the same state. */
const reported = new Set<string>();

/** Logs each warning once per process and configuration hash (a reload with a changed config logs again). */
export function reportWarnings(configHash: string, warnings: readonly string[], warn: (msg: string) => void): void {
  for (const w of warnings) {
    const key = `${configHash}\n${w}`;
    if (reported.has(key)) continue;
    reported.add(key);
    warn(w);
  }
}

/**
 * Loads every configured style. `sources` and `composites` are the state's, used to warn about source URLs
 * naming an id the service does not have (an ad-hoc `a+b` is known when all its members are).
 */
export async function loadStyles(
  configs: readonly StyleConfig[],
  sources: ReadonlyMap<string, TileSource>,
  fonts: FontIndex,
  composites: ReadonlyMap<string, TileSource> = new Map(),
): Promise<LoadedStyles> {
  const known = (id: string) => compositeMembers(id).every((m) => sources.has(m) || composites.has(m));
  const styles = new Map<string, LoadedStyle>();
  const warnings: string[] = [];
  for (const cfg of configs) {
    if (styles.has(cfg.id)) throw new StyleLoadError(`styles: duplicate style id "${cfg.id}" (${styles.get(cfg.id)!.path} and ${cfg.path})`);
    const { loaded, validatorWarnings } = await loadStyle(cfg);
    warnings.push(...validatorWarnings, ...(await checkReferences(loaded, known, fonts)));
    styles.set(cfg.id, loaded);
  }
  return { styles, warnings };
}

async function loadStyle(cfg: StyleConfig): Promise<{ loaded: LoadedStyle; validatorWarnings: string[] }> {
  let bytes: Buffer;
  try {
    bytes = await readFile(cfg.path);
  } catch (err) {
    throw new StyleLoadError(`${cfg.path}: style "${cfg.id}": cannot read the style file: ${(err as Error).message}`);
  }
  let style: StyleSpecification;
  try {
    style = JSON.parse(bytes.toString('utf8')) as StyleSpecification;
  } catch (err) {
    throw new StyleLoadError(`${cfg.path}: style "${cfg.id}": invalid JSON: ${(err as Error).message}`);
  }
  if (!style || typeof style !== 'object' || Array.isArray(style)) {
    throw new StyleLoadError(`${cfg.path}: style "${cfg.id}": a style is a JSON object`);
  }
  const issues = validateStyleMin(style);
  const errors = issues.filter((e) => e.severity !== 'warning');
  if (errors.length > 0) {
    const lines = errors.map((e) => `  ${e.message}`);
    throw new StyleLoadError(`${cfg.path}: style "${cfg.id}" is not a valid MapLibre style (${errors.length} error${errors.length > 1 ? 's' : ''}):\n${lines.join('\n')}`);
  }
  const dir = path.dirname(cfg.path);
  const name = cfg.name ?? (typeof style.name === 'string' && style.name ? style.name : cfg.id);
  const loaded: LoadedStyle = { id: cfg.id, name, path: cfg.path, dir, style, hash: createHash('sha256').update(bytes).digest('hex') };
  if (cfg.sprite_dir) {
    const built = await buildSprites(cfg.sprite_dir, cfg.sdf === true).catch((err: Error) => {
      throw new StyleLoadError(`${cfg.path}: style "${cfg.id}": ${err.message}`);
    });
    loaded.builtSprites = built.sheets;
    const digest = createHash('sha256').update(bytes);
    for (const sheet of built.sheets.values()) digest.update(sheet.json).update(sheet.png);
    loaded.hash = digest.digest('hex');
  } else {
    const sprite = await findSpriteBase(dir, style.sprite);
    if (sprite.base) loaded.spriteBase = sprite.base;
  }
  const validatorWarnings = issues.filter((e) => e.severity === 'warning').map((e) => `${cfg.path}: style "${cfg.id}": ${e.message}`);
  loaded.languages = styleLanguages(cfg);
  // The label rewrite is checked once per style: a style it cannot make valid is served without languages.
  if (loaded.languages.offered !== 'off' && styleReadsNames(style)) {
    const probe = validateStyleMin(localizeStyle(style, parseLanguageTag('de')!)).filter((e) => e.severity !== 'warning');
    if (probe.length > 0) {
      loaded.languages = { offered: 'off', default: undefined, acceptLanguage: false };
      validatorWarnings.push(`${cfg.path}: style "${cfg.id}": its labels cannot be localised (${probe[0].message}); languages are off for it`);
    }
  }
  return { loaded, validatorWarnings };
}

/** Warnings about what a style refers to that this service cannot give it; the style is still served. */
async function checkReferences(style: LoadedStyle, known: (id: string) => boolean, fonts: FontIndex): Promise<string[]> {
  const out: string[] = [];
  const where = `${style.path}: style "${style.id}"`;
  for (const [name, spec] of Object.entries(style.style.sources)) {
    const url = (spec as { url?: unknown }).url;
    const id = sourceRef(url);
    if (id !== undefined && !known(id)) {
      out.push(`${where}: source "${name}" refers to ${String(url)}, which is not a configured source; its url is served unchanged`);
    }
  }
  const sprite = style.style.sprite;
  // Sheets built from sprite_dir are served whatever the file's own sprite URL says.
  if (style.builtSprites) {
    /* nothing to check */
  } else if (typeof sprite === 'string' && !style.spriteBase) {
    out.push(`${where}: no sprite files for "${sprite}" beside the style (looked for .json and .png of ${(await findSpriteBase(style.dir, sprite)).tried.join(', ')}); its sprite URL is served unchanged`);
  } else if (Array.isArray(sprite)) {
    out.push(`${where}: a list of sprites is served unchanged (this service serves one sprite per style)`);
  }
  if (style.style.glyphs !== undefined) {
    if (!fonts.dir) out.push(`${where}: the style has glyphs but no fonts directory is configured; its glyphs URL is served unchanged`);
    else {
      const known = new Set(fonts.names);
      for (const stack of fontStacks(style.style)) {
        if (!stack.some((f) => known.has(f))) out.push(`${where}: no font of the stack "${stack.join(',')}" is in ${fonts.dir}`);
      }
    }
  }
  return out;
}

/** The literal `text-font` stacks of a style's symbol layers (expressions are evaluated per feature: not checked). */
function fontStacks(style: StyleSpecification): string[][] {
  const seen = new Map<string, string[]>();
  for (const layer of style.layers) {
    const value = (layer.layout as Record<string, unknown> | undefined)?.['text-font'];
    const stack = Array.isArray(value) && value.length > 0 && value.every((f) => typeof f === 'string') ? (value as string[]) : undefined;
    if (stack) seen.set(stack.join(','), stack);
  }
  return [...seen.values()];
}

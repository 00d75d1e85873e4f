// The attribution text of a style for static maps: what its sources credit, as one line. A source's own
// `attribution` in the style wins; a source of this service (`mbtiles://id`, `pmtiles://id`, `source://id`) credits
// what the source's configuration or metadata says. Attributions are usually HTML (`<a href=…>© OpenStreetMap
// contributors</a>`): the tags go, the common entities become their characters, duplicates are dropped.
import type { AppState } from '../state/app-state.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { sourceRef } from '../styles/source-ref.js';

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', copy: '©', reg: '®' };

/** Plain text of an HTML fragment: tags removed, entities decoded, white space collapsed. */
export function plainText(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
      if (name[0] === '#') {
        const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : Number(name.slice(1));
        return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : '';
      }
      return ENTITIES[name.toLowerCase()] ?? whole;
    })
    .replace(/\s+/g, ' ')
    .trim();
}

/** The style's sources' attributions, as plain text joined by " | " (empty when none credits anything). */
export function styleAttribution(state: AppState, style: LoadedStyle): string {
  const texts: string[] = [];
  for (const source of Object.values(style.style.sources ?? {})) {
    const own = (source as { attribution?: unknown }).attribution;
    let text = typeof own === 'string' ? own : undefined;
    if (text === undefined) {
      const id = sourceRef((source as { url?: unknown }).url);
      text = id === undefined ? undefined : (state.sources.get(id)?.info.attribution ?? state.composites.get(id)?.info.attribution);
    }
    const plain = text ? plainText(text) : '';
    if (plain && !texts.includes(plain)) texts.push(plain);
  }
  return texts.join(' | ');
}

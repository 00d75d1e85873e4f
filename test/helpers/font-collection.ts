// Font collections (.ttc) for tests, made from one font file: each member a copy of the font under a name of its
// own, optionally drawn at another scale (head.unitsPerEm changed), so that which member is drawn shows in the
// glyphs. Debian ships no small collection, and the fixtures hold only single fonts.

interface Sfnt {
  version: number;
  tables: Map<string, Buffer>;
}

function readSfnt(bytes: Buffer): Sfnt {
  const tables = new Map<string, Buffer>();
  const count = bytes.readUInt16BE(4);
  for (let i = 0; i < count; i++) {
    const r = 12 + 16 * i;
    const offset = bytes.readUInt32BE(r + 8);
    tables.set(bytes.toString('latin1', r, r + 4), bytes.subarray(offset, offset + bytes.readUInt32BE(r + 12)));
  }
  return { version: bytes.readUInt32BE(0), tables };
}

/** A name table (format 0, Windows Unicode, US English) with family (1), style (2), full (4) and PostScript (6) names. */
function nameTable(family: string, style: string): Buffer {
  const names: [number, string][] = [[1, family], [2, style], [4, `${family} ${style}`], [6, `${family}-${style}`.replace(/\s/g, '')]];
  const strings = names.map(([, s]) => Buffer.from(s, 'utf16le').swap16());
  const head = Buffer.alloc(6 + 12 * names.length);
  head.writeUInt16BE(0, 0);
  head.writeUInt16BE(names.length, 2);
  head.writeUInt16BE(head.length, 4);
  let at = 0;
  names.forEach(([id], i) => {
    const r = 6 + 12 * i;
    [3, 1, 0x409, id, strings[i].length, at].forEach((v, k) => head.writeUInt16BE(v, r + 2 * k));
    at += strings[i].length;
  });
  return Buffer.concat([head, ...strings]);
}

/** A collection of copies of the font `ttf`, each named by `family` and `style`, `unitsPerEm` changed if given. */
export function fontCollection(ttf: Buffer, members: { family: string; style: string; unitsPerEm?: number }[]): Buffer {
  const fonts = members.map((m) => {
    const { version, tables } = readSfnt(ttf);
    const copy = new Map(tables);
    copy.set('name', nameTable(m.family, m.style));
    if (m.unitsPerEm) {
      const head = Buffer.from(copy.get('head')!);
      head.writeUInt16BE(m.unitsPerEm, 18);
      copy.set('head', head);
    }
    return { version, tables: copy };
  });
  const pad = (n: number) => (n + 3) & ~3;
  const header = Buffer.alloc(12 + 4 * fonts.length);
  header.write('ttcf', 0, 'latin1');
  header.writeUInt32BE(0x00010000, 4);
  header.writeUInt32BE(fonts.length, 8);
  const parts: Buffer[] = [header];
  let at = header.length;
  fonts.forEach((f, i) => {
    header.writeUInt32BE(at, 12 + 4 * i);
    const dir = Buffer.alloc(12 + 16 * f.tables.size);
    dir.writeUInt32BE(f.version, 0);
    dir.writeUInt16BE(f.tables.size, 4);
    let tableAt = at + dir.length;
    const bodies: Buffer[] = [];
    [...f.tables.entries()].forEach(([tag, body], k) => {
      const r = 12 + 16 * k;
      dir.write(tag, r, 'latin1');
      dir.writeUInt32BE(tableAt, r + 8);
      dir.writeUInt32BE(body.length, r + 12);
      bodies.push(body, Buffer.alloc(pad(body.length) - body.length));
      tableAt += pad(body.length);
    });
    parts.push(dir, ...bodies);
    at = tableAt;
  });
  return Buffer.concat(parts);
}

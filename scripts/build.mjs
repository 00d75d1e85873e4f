// Bundles the TypeScript sources into dist/ with esbuild.
// Why bundle: @maplibre/mlt ships ESM with extensionless relative imports that Node's loader refuses;
// bundling resolves them at build time. Native and heavy runtime packages stay external.
import { build } from 'esbuild';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const bundled = new Set(['@maplibre/mlt']);
const external = Object.keys(pkg.dependencies).filter((d) => !bundled.has(d));
mkdirSync('dist', { recursive: true });

const common = {
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  external: external.flatMap((d) => [d, `${d}/*`]),
  define: { __VERSION__: JSON.stringify(pkg.version) },
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  logLevel: 'warning',
};

// The CLI is split at its `await import()`s (src/cli.ts): a subcommand loads its own chunks, not the server's.
// The chunks sit beside dist/cli.js, so code that finds files from import.meta.url (dist/client/, dist/workers/)
// finds them as before. Every script of an earlier build there goes first: chunk names change with their content.
for (const e of readdirSync('dist', { withFileTypes: true })) if (e.isFile() && /\.js(\.map)?$/.test(e.name)) rmSync(`dist/${e.name}`);
await build({ ...common, entryPoints: { cli: 'src/cli.ts' }, splitting: true }).catch(() => process.exit(1));

// The thread entries stay one file each: a chunk shared with the CLI would sit in dist/, not dist/workers/.
await build({
  ...common,
  entryPoints: Object.fromEntries(
    Object.entries({
      'workers/render': 'workers/render.ts',
      'workers/transcode': 'workers/transcode.ts',
      'workers/raster': 'workers/raster.ts',
      'workers/terrain': 'workers/terrain.ts',
      'workers/glyphs': 'workers/glyphs.ts',
    }).filter(([, file]) => existsSync(file)),
  ),
}).catch(() => process.exit(1));

// The pages' browser scripts and style sheet are served as they are (src/http/pages/page-files.ts).
cpSync('src/http/pages/client', 'dist/client', { recursive: true });

// Hillshade's SIMD kernels (wasm/terrain-kernels.ts) compiled by AssemblyScript into dist/terrain-kernels.wasm,
// which src/terrain/hillshade-kernels.ts loads in each terrain thread.
{
  const asc = await import('assemblyscript/asc');
  const { error, stderr } = await asc.main(
    ['wasm/terrain-kernels.ts', '--outFile', 'dist/terrain-kernels.wasm', '-O3', '--runtime', 'stub', '--enable', 'simd', '--noAssert'],
    { stdout: process.stdout, stderr: process.stderr },
  );
  if (error) {
    console.error(`wasm/terrain-kernels.ts: ${error.message}\n${stderr.toString()}`);
    process.exit(1);
  }
}

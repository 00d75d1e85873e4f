// The browse scenario as a k6 test, to run against your own deployment:
//
//   k6 run -e BASE_URL=https://tiles.example.com -e STYLE=basic bench/k6/browse.ts
//
// k6 0.57 or later runs this TypeScript file as it is (it strips the types with esbuild) and loads the scenario
// module next to it by its path. The scenario itself (screens, moves, walks) is bench/k6/browse-scenario.ts, the
// module bench/browse.bench.ts (`BENCH=browse make bench`) runs in Node against a local server, so the figures of
// both compare. bench/k6/README.md says what each setting and metric means; `npx tsc -p bench/k6/tsconfig.json`
// type-checks this file against @types/k6 (test/k6-script.test.ts does so in `make test`).
//
// Environment (k6 -e NAME=value): BASE_URL, STYLE, USERS, SEED, and AREA_Z, AREA_X0, AREA_Y0, AREA_SIZE, START_ZOOM,
// MIN_ZOOM, MAX_ZOOM to move the walk onto the region your data covers; FILL_P95_MS replaces the screen-fill target.
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import http from 'k6/http';
import type { ObjectBatchRequest } from 'k6/http';
import { Counter, Rate, Trend } from 'k6/metrics';
import type { Options } from 'k6/options';
import { areaAt, BROWSE, userWalk, viewTiles } from './browse-scenario.ts';
import type { BrowseSettings } from './browse-scenario.ts';

/** An integer setting from the environment, or its default; anything else stops the test before it starts. */
function intEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = __ENV[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new Error(`${name}=${raw}: expected a whole number`);
  const n = Number(raw);
  if (n < min || n > max) throw new Error(`${name}=${raw}: expected ${min}..${max}`);
  return n;
}

const BASE_URL = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
const STYLE = __ENV.STYLE || 'osm-liberty';
const USERS = intEnv('USERS', 4, 1, 100000);
const SEED = intEnv('SEED', 1, 0, 1000000);

const AREA_Z = intEnv('AREA_Z', BROWSE.area.z, 0, 24);
const SETTINGS: BrowseSettings = {
  ...BROWSE,
  area: {
    z: AREA_Z,
    x0: intEnv('AREA_X0', BROWSE.area.x0, 0, 2 ** AREA_Z - 1),
    y0: intEnv('AREA_Y0', BROWSE.area.y0, 0, 2 ** AREA_Z - 1),
    size: intEnv('AREA_SIZE', BROWSE.area.size, 1, 2 ** AREA_Z),
  },
  startZoom: intEnv('START_ZOOM', BROWSE.startZoom, 0, 24),
  minZoom: intEnv('MIN_ZOOM', BROWSE.minZoom, 0, 24),
  maxZoom: intEnv('MAX_ZOOM', BROWSE.maxZoom, 0, 24),
};

/** Refuses settings under which a walk could leave the area or stand still (browse-scenario.ts assumes neither). */
function checkSettings(s: BrowseSettings): void {
  const { z, x0, y0, size } = s.area;
  if (x0 + size > 2 ** z || y0 + size > 2 ** z) throw new Error(`the area (AREA_X0/AREA_Y0 + AREA_SIZE) leaves the world at z${z}`);
  if (!(s.minZoom <= s.startZoom && s.startZoom <= s.maxZoom))
    throw new Error(`expected MIN_ZOOM <= START_ZOOM <= MAX_ZOOM, got ${s.minZoom}, ${s.startZoom}, ${s.maxZoom}`);
  // A zoom move that would leave the range turns around, which needs a second level to turn to.
  if (s.minZoom === s.maxZoom) throw new Error(`MIN_ZOOM and MAX_ZOOM are both ${s.minZoom}: the walk needs at least two zoom levels`);
  // The area shrinks with the zoom; at the lowest one it must still be wider than a screen, or a pan has nowhere to go.
  const edge = areaAt(s, s.minZoom).size;
  if (edge <= Math.max(s.cols, s.rows))
    throw new Error(`the area is ${edge} tiles across at z${s.minZoom}, not more than a screen (${s.cols}x${s.rows}): raise AREA_SIZE or MIN_ZOOM`);
}
checkSettings(SETTINGS);

/** The project's target for screen fill p95: 400 ms for one user alone, 1 s for 4 users on 2 cores. */
const FILL_P95_MS = intEnv('FILL_P95_MS', USERS === 1 ? 400 : 1000, 1, 3600000);

/** Time from a view's first tile request to its last answer, for views that asked for at least one tile. */
const screenFill = new Trend('screen_fill', true);
/** One tile request, from sending it to the end of its answer (k6's timings.duration). */
const tileDuration = new Trend('tile_duration', true);
/** Tiles asked for. */
const tiles = new Counter('tiles');
/** Share of tile answers that were not a 200 image/png. */
const tileErrors = new Rate('tile_errors');

export const options: Options = {
  scenarios: {
    browse: {
      executor: 'per-vu-iterations',
      vus: USERS,
      // One iteration is one user's whole walk.
      iterations: 1,
      maxDuration: '10m',
    },
  },
  // http.batch runs min(batch, requests) workers that each take the next request as soon as theirs is answered,
  // with at most batchPerHost of them talking to one host: one batch per view with both at 6 keeps 6 requests in
  // flight until the view's last tiles, like a browser's 6 connections to a host. Batches of 6 in turn would wait
  // for the slowest tile of each batch before sending the next.
  batch: BROWSE.connections,
  batchPerHost: BROWSE.connections,
  // Only the status and Content-Type are checked; the images are read off the wire but not kept.
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)', 'count'],
  thresholds: {
    screen_fill: [`p(95)<${FILL_P95_MS}`],
    tile_errors: ['rate==0'],
  },
};

function header(res: { headers: { [name: string]: string } }, name: string): string {
  const wanted = name.toLowerCase();
  for (const key of Object.keys(res.headers)) if (key.toLowerCase() === wanted) return res.headers[key];
  return '';
}

export default function browse(): void {
  // VUs are numbered from 1 in the whole test; users from 0, as in bench/browse.bench.ts.
  const user = exec.vu.idInTest - 1;
  const walk = userWalk(SETTINGS, user, SEED);
  // The client's memory: every tile it already got (a failed tile is asked for again when a later view shows it).
  const seen = new Set<string>();
  for (let i = 0; i < walk.length; i++) {
    const view = walk[i];
    const wanted = viewTiles(SETTINGS, view).filter((path) => !seen.has(path));
    if (wanted.length > 0) {
      const requests: ObjectBatchRequest[] = wanted.map((path) => ({
        method: 'GET',
        url: `${BASE_URL}/styles/${STYLE}/${path}`,
        params: {
          timeout: '120s',
          // One name for every tile URL, so that k6 keeps one series for them rather than one per tile.
          tags: { name: `${BASE_URL}/styles/${STYLE}/{z}/{x}/{y}.png`, scale: `${view.scale}x` },
        },
      }));
      const started = Date.now();
      const responses = http.batch(requests);
      screenFill.add(Date.now() - started, { scale: `${view.scale}x` });
      for (let k = 0; k < responses.length; k++) {
        const res = responses[k];
        tiles.add(1);
        tileDuration.add(res.timings.duration);
        const ok = check(res, {
          'tile status is 200': (r) => r.status === 200,
          'tile content-type is image/png': (r) => header(r, 'Content-Type').startsWith('image/png'),
        });
        tileErrors.add(!ok);
        if (ok) seen.add(wanted[k]);
      }
    }
    if (i < walk.length - 1) sleep(SETTINGS.thinkMs / 1000);
  }
}

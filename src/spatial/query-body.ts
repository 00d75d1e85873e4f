// The body of `POST /api/spatial/query`, validated with valibot; unknown fields are refused (a typo such as
// "layer" for "layers" would otherwise be silently ignored). Defaults from the spec: zoom 14, limit 100,
// every layer, and the source's center for the location.
import * as v from 'valibot';
import { issuePath } from '../config/load.js';

export const MAX_LIMIT = 10_000;

const lon = v.pipe(v.number('a number'), v.finite('a finite number'), v.minValue(-180, 'longitudes are -180..180'), v.maxValue(180, 'longitudes are -180..180'));
const lat = v.pipe(v.number('a number'), v.finite('a finite number'), v.minValue(-90, 'latitudes are -90..90'), v.maxValue(90, 'latitudes are -90..90'));

const FIELDS = 'source, bbox, zoom, layers, limit';

export const QueryBodySchema = v.strictObject(
  {
    source: v.pipe(v.string('a source id (string) is required'), v.minLength(1, 'a source id (string) is required')),
    bbox: v.optional(
      v.pipe(
        v.strictTuple([lon, lat, lon, lat], 'an array of four numbers: west, south, east, north'),
        v.check(([w, , e]) => w <= e, 'west must be <= east (a box across the antimeridian is two queries)'),
        v.check(([, s, , n]) => s <= n, 'south must be <= north'),
      ),
    ),
    zoom: v.optional(v.pipe(v.number('a number'), v.integer('an integer'), v.minValue(0, 'zoom 0..22'), v.maxValue(22, 'zoom 0..22')), 14),
    layers: v.optional(v.array(v.pipe(v.string('layer names are strings'), v.minLength(1, 'layer names are not empty')), 'an array of layer names')),
    limit: v.optional(v.pipe(v.number('a number'), v.integer('an integer'), v.minValue(1, `1..${MAX_LIMIT}`), v.maxValue(MAX_LIMIT, `1..${MAX_LIMIT}`)), 100),
  },
  `a JSON object with the fields ${FIELDS} and no others`,
);

export type QueryBody = v.InferOutput<typeof QueryBodySchema>;

export type ParsedBody = { ok: true; body: QueryBody } | { ok: false; problems: string[] };

/** The object-level issues of a field say what is wrong with the field itself: missing, or not a field at all. */
function message(issue: v.BaseIssue<unknown>): string {
  if (issue.type === 'strict_object' && issue.path?.length === 1) return issue.expected === 'never' ? `unknown field (the fields are ${FIELDS})` : 'required';
  return issue.message;
}

/** Validates a parsed JSON body; problems name the field (`bbox[2]: ...`). */
export function parseQueryBody(raw: unknown): ParsedBody {
  // valibot's object schemas take arrays as objects (and report their indices as unknown fields).
  if (Array.isArray(raw)) return { ok: false, problems: [`(root): a JSON object with the fields ${FIELDS} and no others`] };
  const result = v.safeParse(QueryBodySchema, raw);
  if (result.success) return { ok: true, body: result.output };
  return { ok: false, problems: result.issues.map((i) => `${issuePath(i)}: ${message(i)}`) };
}

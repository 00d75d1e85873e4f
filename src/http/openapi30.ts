// An OpenAPI 3.0 form of the service's OpenAPI 3.1 document, for clients and conformance classes (OGC API's
// oas30) that read 3.0 only. It is converted from the document the route specs make, so the two never disagree.
// 3.1's schemas are JSON Schema 2020-12; 3.0's are a subset with its own spellings of a few things, rewritten here.

type Json = unknown;
type JsonObject = Record<string, Json>;

const isObject = (x: Json): x is JsonObject => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Members of a 3.1 schema that 3.0 has no room for, and that say nothing a 3.0 reader could act on. */
const DROPPED = new Set(['$schema', '$id', '$comment', 'contentMediaType', 'contentEncoding']);

/** A JSON Schema 2020-12 schema (an OpenAPI 3.1 one) in the OpenAPI 3.0 dialect. */
export function schemaTo30(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(schemaTo30);
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(schema)) {
    if (DROPPED.has(k)) continue;
    switch (k) {
      case 'const':
        // 3.0 has no const: a one-value enum says the same.
        out.enum = [v];
        break;
      case 'examples':
        // 3.0 takes one example.
        if (Array.isArray(v) && v.length > 0) out.example = v[0];
        break;
      case 'exclusiveMinimum':
      case 'exclusiveMaximum':
        // 2020-12 gives the bound itself; 3.0 gives minimum/maximum and a flag.
        if (typeof v === 'number') {
          out[k === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = v;
          out[k] = true;
        } else out[k] = v;
        break;
      case 'type':
        Object.assign(out, typeTo30(v));
        break;
      case 'properties':
      case 'patternProperties':
      case '$defs':
        out[k === '$defs' ? 'definitions' : k] = isObject(v) ? Object.fromEntries(Object.entries(v).map(([name, s]) => [name, schemaTo30(s)])) : v;
        break;
      default:
        out[k] = schemaTo30(v);
    }
  }
  // anyOf/oneOf with a `{type: "null"}` branch: the other branches, nullable.
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = out[key];
    if (!Array.isArray(branches)) continue;
    const rest = branches.filter((b) => !(isObject(b) && b.nullable === true && b.type === undefined && Object.keys(b).length === 1));
    if (rest.length < branches.length) {
      out.nullable = true;
      if (rest.length === 1 && isObject(rest[0])) {
        delete out[key];
        Object.assign(out, rest[0]);
      } else out[key] = rest;
    }
  }
  return out;
}

/** A 2020-12 `type` (a name or a list of names, "null" among them) as 3.0 members. */
function typeTo30(type: Json): JsonObject {
  if (!Array.isArray(type)) return type === 'null' ? { nullable: true } : { type };
  const names = type.filter((t) => t !== 'null');
  const nullable = names.length < type.length ? { nullable: true } : {};
  if (names.length === 1) return { type: names[0], ...nullable };
  if (names.length === 0) return nullable;
  // Several types: 3.0 spells a union as anyOf.
  return { anyOf: names.map((t) => ({ type: t })), ...nullable };
}

/** Parameters, request bodies and responses of one operation, their schemas in 3.0. */
function operationTo30(op: JsonObject): JsonObject {
  const out: JsonObject = { ...op };
  if (Array.isArray(op.parameters)) out.parameters = op.parameters.map((p) => (isObject(p) ? { ...p, ...(p.schema !== undefined ? { schema: schemaTo30(p.schema) } : {}) } : p));
  if (isObject(op.requestBody)) out.requestBody = { ...op.requestBody, content: contentTo30(op.requestBody.content) };
  if (isObject(op.responses)) {
    out.responses = Object.fromEntries(
      Object.entries(op.responses).map(([status, r]) => {
        if (!isObject(r)) return [status, r];
        const headers = isObject(r.headers) ? Object.fromEntries(Object.entries(r.headers).map(([h, d]) => [h, isObject(d) && d.schema !== undefined ? { ...d, schema: schemaTo30(d.schema) } : d])) : undefined;
        return [status, { ...r, ...(r.content !== undefined ? { content: contentTo30(r.content) } : {}), ...(headers ? { headers } : {}) }];
      }),
    );
  }
  return out;
}

function contentTo30(content: Json): Json {
  if (!isObject(content)) return content;
  return Object.fromEntries(Object.entries(content).map(([type, m]) => [type, isObject(m) && m.schema !== undefined ? { ...m, schema: schemaTo30(m.schema) } : m]));
}

/**
 * The OpenAPI 3.0 document of the paths of a 3.1 document that `keep` selects (the OGC API's own under /ogc),
 * served at `serverUrl`.
 */
export function openApi30(doc31: JsonObject, keep: (path: string) => boolean, info: { title: string; description: string }, serverUrl: string): JsonObject {
  const paths31 = isObject(doc31.paths) ? doc31.paths : {};
  const paths: JsonObject = {};
  for (const [p, item] of Object.entries(paths31)) {
    if (!keep(p) || !isObject(item)) continue;
    paths[p] = Object.fromEntries(Object.entries(item).map(([method, op]) => [method, isObject(op) ? operationTo30(op) : op]));
  }
  const version = isObject(doc31.info) ? doc31.info.version : undefined;
  return { openapi: '3.0.3', info: { ...info, version }, servers: [{ url: serverUrl }], paths };
}

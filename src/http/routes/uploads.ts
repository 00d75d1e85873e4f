// Uploads: POST /api/upload (multipart, one field `file`), GET /api/upload, DELETE /api/upload/{id}. The body is
// streamed to disk by src/uploads/; this module maps outcomes to answers. Without server.upload_dir the routes
// are not mounted (404 naming the setting, decisions.md).
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Context } from 'hono';
import * as v from 'valibot';
import { sourceIdOf, parseUploadIdParam, ALLOWED_EXTENSIONS_TEXT } from '../../uploads/names.js';
import type { UploadRecord } from '../../uploads/registry.js';
import { requestIdOf } from '../access-log.js';
import { urlContext, type ServerContext } from '../context.js';
import { lingerAfterEarlyAnswer } from '../linger.js';
import { problem } from '../problem.js';
import { sendJson } from '../respond.js';
import { param, type Absence, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';
import { sourceTileJsonUrl } from '../../serve/rewrite.js';
import type { Logger } from '../../log.js';

const PROBLEM = { 'application/problem+json': true as const };
const NO_STORE = 'no-store';

export const uploadAbsence: Absence = (state) => (state.config.server.upload_dir ? undefined : 'uploads need server.upload_dir to be set');

const UploadDoc = v.object({ id: v.string(), source_id: v.string(), file_name: v.string(), format: v.string(), tilejson_url: v.string() });
const ListDoc = v.array(v.object({ id: v.string(), file_name: v.string(), format: v.string(), file_path: v.string() }));
const ID_PARAM = { id: { schema: v.string(), description: 'the upload id (UUID) or its source id `upload-<uuid>`' } };

/** The incoming request of a Hono context, when it came from the network. */
const incomingOf = (c: Context) => (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
/** Its response on the socket. */
const outgoingOf = (c: Context) => (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;

/**
 * The body as a node stream and its headers: the socket's own request when there is one (backpressure all the
 * way to the client), else the web stream. `c.req.raw.body` must not be touched while the node request is read:
 * @hono/node-server would start a second reader on it.
 */
function bodyOf(c: Context): { stream: Readable; headers: IncomingHttpHeaders } {
  const incoming = incomingOf(c);
  if (incoming) return { stream: incoming, headers: incoming.headers };
  const body = c.req.raw.body;
  const stream = body ? Readable.fromWeb(body as Parameters<typeof Readable.fromWeb>[0]) : Readable.from([]);
  return { stream, headers: Object.fromEntries(c.req.raw.headers) };
}

/** A problem answered before the body has all arrived also ends the connection, so the rest is not kept. */
function early(c: Context, status: number, title: string, detail: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Response {
  const incoming = incomingOf(c);
  const unfinished = incoming?.complete === false && !incoming.destroyed;
  // The client gets to read the answer before the connection goes (src/http/linger.ts).
  if (unfinished) lingerAfterEarlyAnswer(incoming);
  return problem(c, status, title, detail, extra, unfinished ? { ...headers, Connection: 'close' } : headers);
}

function listed(r: UploadRecord) {
  return { id: r.id, file_name: r.fileName, format: r.format, file_path: r.filePath };
}

export function registerUploadRoutes(r: Router, ctx: ServerContext, log: Logger): void {
  const uploads = ctx.uploads;
  if (!uploads) return;

  r.add(
    PUBLIC.upload,
    {
      summary: 'Upload an MBTiles archive or a GeoTIFF, served at once as a temporary source',
      tag: 'Uploads',
      description:
        `multipart/form-data with one file in the field \`file\`, streamed to \`server.upload_dir\`. Types: ${ALLOWED_EXTENSIONS_TEXT} ` +
        '(.sqlite and .db are MBTiles; .tif/.tiff are GeoTIFFs served as raster tiles). The source `upload-<uuid>` is served by every process ' +
        'until it is deleted or the server restarts.',
      body: { contentType: 'multipart/form-data', schema: v.object({ file: v.string() }) },
      responses: {
        200: { description: 'the upload record', content: { 'application/json': UploadDoc } },
        400: { description: 'unsupported type, invalid file, or not a multipart body with one file in `file`', content: PROBLEM },
        404: { description: 'server.upload_dir is not set', content: PROBLEM },
        413: { description: 'the file is larger than server.upload_max_size_mb', content: PROBLEM },
        408: { description: 'the body did not arrive in full within server.request_timeout_ms', content: PROBLEM },
        500: { description: 'the file could not be written or registered', content: PROBLEM },
        503: { description: 'the server is stopping: the upload was not kept (Retry-After)', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const { upload_dir: dir, upload_max_size_mb: maxMb } = state.config.server;
      const body = bodyOf(c);
      // The response can close before the route answers: the body timeout's 408 (http/front.ts) or the client
      // gone. The upload must end then, and remove its file, even while the client holds its connection open.
      const ended = new AbortController();
      outgoingOf(c)?.once('close', () => ended.abort());
      const outcome = await uploads.upload(body.stream, body.headers, dir!, maxMb, ended.signal);
      switch (outcome.kind) {
        case 'ok': {
          const { record } = outcome;
          const sourceId = sourceIdOf(record.id);
          return sendJson(
            c,
            state,
            { id: record.id, source_id: sourceId, file_name: record.fileName, format: record.format, tilejson_url: sourceTileJsonUrl(sourceId, urlContext(c, state)) },
            NO_STORE,
          );
        }
        case 'bad-request':
          return early(c, 400, 'Invalid upload', outcome.detail);
        case 'too-large':
          return early(c, 413, 'Upload too large', `the file is larger than the upload limit of ${maxMb} MB (server.upload_max_size_mb)`, { limit_mb: maxMb });
        case 'aborted':
          // The client is gone, or the request was answered already (408); this answer reaches nobody.
          return early(c, 400, 'Upload incomplete', 'the request body ended before the upload was complete');
        case 'stopped':
          return early(c, 503, 'Server stopping', 'the server is stopping: the upload was not kept; send it again', {}, { 'Retry-After': '5' });
        case 'failed':
          log.error({ err: outcome.error, req_id: requestIdOf(incomingOf(c)) }, 'upload failed');
          return early(c, 500, 'Upload failed', 'the file could not be stored or registered; the error is in the server log');
      }
    },
    uploadAbsence,
  );

  r.add(
    PUBLIC.uploads,
    {
      summary: 'The uploads served now',
      tag: 'Uploads',
      responses: { 200: { description: 'every upload', content: { 'application/json': ListDoc } }, 404: { description: 'server.upload_dir is not set', content: PROBLEM } },
    },
    (c) => sendJson(c, ctx.holder.current, uploads.list().map(listed), NO_STORE),
    uploadAbsence,
  );

  r.add(
    PUBLIC.uploadDelete,
    {
      summary: 'Remove an upload from every process and delete its file',
      tag: 'Uploads',
      params: ID_PARAM,
      responses: {
        204: { description: 'removed' },
        404: { description: 'no such upload, or server.upload_dir is not set', content: PROBLEM },
        500: { description: 'another process did not confirm the removal', content: PROBLEM },
      },
    },
    async (c) => {
      const raw = param(c, 'id');
      const id = parseUploadIdParam(raw);
      const notFound = () => problem(c, 404, 'Not found', `no upload with id ${JSON.stringify(raw.slice(0, 100))}`);
      if (id === undefined) return notFound();
      try {
        if (!(await uploads.remove(id))) return notFound();
      } catch (err) {
        log.error({ err, upload: id, req_id: requestIdOf(incomingOf(c)) }, 'upload removal failed');
        return problem(c, 500, 'Removal failed', 'the upload could not be removed from every process; the error is in the server log');
      }
      return c.body(null, 204);
    },
    uploadAbsence,
  );
}

// The routes of the admin listener (`server.admin_bind`, src/http/admin/listener.ts): operator actions that are
// never reachable on the public port. The listener has no access gate and no rate limits (it is bound where
// only operators reach it), so these declarations read nothing; they give the listener its paths, its 404 and
// its 405 with `Allow`, and the next admin route is one more line here.
import { route, type RouteDeclaration } from './declaration.js';

const admin = (method: 'get' | 'post' | 'delete', path: string, hono: string, mountedWith?: string) => route('admin', method, path, hono, { undocumented: true, ...(mountedWith ? { mountedWith } : {}) });

export const ADMIN = {
  reload: admin('post', '/__admin/reload', '/__admin/reload'),
  // An expire list, box or geometry of changed data (docs/live-data.md).
  expire: admin('post', '/__admin/expire', '/__admin/expire'),
  // With [mcp.oauth]: the OAuth clients and refresh-token sessions (`{id}` is one path segment).
  oauthClients: admin('get', '/__admin/oauth/clients', '/__admin/oauth/clients', '[mcp.oauth]'),
  oauthClientDelete: admin('delete', '/__admin/oauth/clients/{client_id}', '/__admin/oauth/clients/:client_id', '[mcp.oauth]'),
  oauthSessions: admin('get', '/__admin/oauth/sessions', '/__admin/oauth/sessions', '[mcp.oauth]'),
  oauthSessionDelete: admin('delete', '/__admin/oauth/sessions/{token_id}', '/__admin/oauth/sessions/:token_id', '[mcp.oauth]'),
} as const satisfies Record<string, RouteDeclaration>;

export const ADMIN_ROUTES: readonly RouteDeclaration[] = Object.values(ADMIN);

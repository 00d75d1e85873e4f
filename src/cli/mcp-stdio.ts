// `tileserver-ts mcp-stdio`: the MCP tools for an agent on this machine, over stdin/stdout (the agent starts this
// process and speaks JSON-RPC to it). No listener, no authentication (whoever can start the process can read the
// files it serves): the tools answer through the same Hono app as the HTTP service, in-process. Logs stay on
// stderr, since stdout carries the protocol. Rendering is not started here, so the static map tool is not offered.
import type { LoadedConfig } from '../config/load.js';
import { createApp } from '../http/app.js';
import type { ServerContext } from '../http/context.js';
import type { Logger } from '../log.js';
import { createMcpServer } from '../mcp/server.js';
import { buildAppState } from '../state/build.js';
import { StateHolder } from '../state/holder.js';
import { initCodecs } from '../tiles/encoding.js';
import { VERSION } from '../version.js';

export async function runMcpStdio(loaded: LoadedConfig, log: Logger): Promise<void> {
  await initCodecs();
  const state = await buildAppState(loaded);
  const holder = new StateHolder(state);
  const ctx: ServerContext = {
    holder,
    version: VERSION,
    runtime: { rendererEnabled: false, renderer: undefined, rendererState: 'unavailable', rendererWanted: false, peersNotReady: [], renderRoutesMounted: false, scrapeListenerActive: false },
  };
  const { app } = createApp(ctx, log);
  const { server: s } = loaded.config;
  // URLs in answers (TileJSON tiles) point where the HTTP service of this configuration would listen.
  const origin = (s.public_url ?? `http://${s.host === '0.0.0.0' ? 'localhost' : s.host}:${s.port}`).replace(/\/+$/, '');
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const server = await createMcpServer({ version: VERSION, renderingOn: false, dispatch: async (req) => app.fetch(req, {}), origin });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
  process.stdin.once('end', () => void server.close());
  await server.connect(transport);
  log.info({ sources: state.sources.size }, 'mcp-stdio: serving the MCP tools on stdin/stdout');
  await closed;
  await state.close();
  process.exit(0);
}

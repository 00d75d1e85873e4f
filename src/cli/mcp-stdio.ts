// `tileserver-ts mcp-stdio`: the MCP tools for an agent on this machine, over stdin/stdout (the agent starts this
// process and speaks JSON-RPC to it). No listener, no authentication (whoever can start the process can read the
// files it serves): the tools answer through the same Hono app, state and render service as the HTTP service,
// in-process (src/seed/service.ts builds them, as it does for a seed). Logs stay on stderr, since stdout carries
// the protocol.
import type { LoadedConfig } from '../config/load.js';
import type { Logger } from '../log.js';
import { createMcpServer } from '../mcp/server.js';
import { startInProcess } from '../seed/service.js';
import { VERSION } from '../version.js';

export async function runMcpStdio(loaded: LoadedConfig, log: Logger): Promise<void> {
  // The agent ends this process by closing stdin, or with SIGTERM/SIGINT: either way the MCP server closes, then
  // the renderers and sources, so no browser outlives the process. A signal during start-up is kept until the
  // server exists (the render pool may already be starting by then).
  let stopAsked: string | undefined;
  let stop = (why: string): void => void (stopAsked ??= why);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => stop(signal));

  // Rendering runs as in the HTTP service: unless server.disable_render is set, the pool starts in the
  // background (at once for configured styles, at the first render when only generated styles exist), and
  // render_static_map is offered; while the renderers start it answers a tool error carrying the route's 503.
  const rendering = !loaded.config.server.disable_render;
  const service = await startInProcess(loaded, log, { render: rendering });
  const { server: s } = loaded.config;
  // URLs in answers (TileJSON tiles) point where the HTTP service of this configuration would listen.
  const origin = (s.public_url ?? `http://${s.host === '0.0.0.0' ? 'localhost' : s.host}:${s.port}`).replace(/\/+$/, '');
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const server = await createMcpServer({ version: VERSION, renderingOn: rendering && service.ctx.render !== undefined, dispatch: (req) => service.fetch(req), origin });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
  stop = (why) => {
    log.info({ reason: why }, 'mcp-stdio: stopping');
    void server.close();
  };
  process.stdin.once('end', () => stop('stdin closed'));
  await server.connect(transport);
  log.info({ sources: service.ctx.holder.current.sources.size, rendering }, 'mcp-stdio: serving the MCP tools on stdin/stdout');
  if (stopAsked) stop(stopAsked);
  await closed;
  await service.close();
  log.info('mcp-stdio: stopped');
  process.exit(0);
}

// One MCP server over the tools (src/mcp/tools.ts), for either transport: Streamable HTTP at /mcp (a fresh server
// per request: the endpoint is stateless, so any worker process can answer any request) or stdio
// (`tileserver-ts mcp-stdio`, one server for the life of the process).
// The SDK's low-level `Server` is used rather than `McpServer`: McpServer's tools take zod schemas, and the
// inputs here are valibot schemas (the project's validator) with their JSON Schema generated from them.
// The SDK is imported when a server is first made, not when the service starts: it costs about 0.2 s of every
// process's start, and most configurations never enable [mcp].
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { callTool, mcpTools, toolListing, type Dispatch } from './tools.js';

export interface McpServerOptions {
  version: string;
  /** Whether the static map tool is offered. */
  renderingOn: boolean;
  /** Answers the tools' route requests in-process. */
  dispatch: Dispatch;
  /** Origin the tools' requests carry: URLs in answers (TileJSON tile URLs) are built on it unless server.public_url is set. */
  origin: string;
}

/** `tools/list` answers, made once per tool set (a server is made per HTTP request). */
const listings = new Map<boolean, ReturnType<typeof toolListing>>();

export async function createMcpServer(o: McpServerOptions): Promise<Server> {
  const [{ Server }, { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  const tools = mcpTools(o.renderingOn);
  let listing = listings.get(o.renderingOn);
  if (!listing) listings.set(o.renderingOn, (listing = toolListing(tools)));
  const server = new Server(
    { name: 'tileserver-ts', version: o.version },
    {
      capabilities: { tools: {} },
      instructions:
        'A map tile server. Start with list_sources and list_styles; get_source_schema tells the layers and fields to query; ' +
        'query_features and get_tile_geojson read features; render_static_map (when offered) returns a picture.',
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listing! }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const result = await callTool(tools, req.params.name, req.params.arguments, o.dispatch, o.origin);
    if (!result) throw new McpError(ErrorCode.InvalidParams, `unknown tool "${req.params.name}"; the tools are ${tools.map((t) => t.name).join(', ')}`);
    return result;
  });
  return server;
}

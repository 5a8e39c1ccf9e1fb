// node bench/node/over_http.mjs PORT DIR...
//
// Serves @modelcontextprotocol/server-filesystem, its code unchanged, over the TypeScript SDK's streamable HTTP
// transport (session mode, answers as SSE, http://127.0.0.1:PORT/mcp) instead of stdio, the only transport its own
// entry point offers. It gives bench/mcp_latency.sh an HTTP row for the Node server, so agent-read over HTTP can be
// set beside Node over HTTP as well as beside Node over stdio.
//
// How: a module hook (over_http_hooks.mjs) hands the server's import of the SDK's stdio transport a class of the same
// name that is the SDK's streamable HTTP transport listening on PORT (over_http_transport.mjs). Nothing else of the
// server changes: its one McpServer, its tools and its checks of paths are those of its stdio build. One transport
// holds one session, which is all the latency client opens (its burst sends on the one session).
import { register } from "node:module";

const [port, ...directories] = process.argv.slice(2);
if (!/^\d+$/.test(port ?? "") || directories.length === 0) {
  console.error("usage: node bench/node/over_http.mjs PORT DIR...");
  process.exit(2);
}
process.env.OVER_HTTP_PORT = port;
// The server takes its allowed directories from its arguments.
process.argv.splice(2, 1);
register("./over_http_hooks.mjs", import.meta.url);
await import("./node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

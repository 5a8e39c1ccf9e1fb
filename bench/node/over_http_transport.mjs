// Stands in for the SDK's stdio transport in server-filesystem (see over_http.mjs): the SDK's streamable HTTP
// transport with sessions, fed by a node:http server on 127.0.0.1:$OVER_HTTP_PORT. Every request, whatever its path,
// goes to the transport, which reads and checks it as the SDK does for any Node server.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

export class StdioServerTransport extends StreamableHTTPServerTransport {
  constructor() {
    super({ sessionIdGenerator: () => randomUUID() });
    const listener = http.createServer((request, response) => {
      this.handleRequest(request, response).catch((error) => {
        console.error("over_http:", error);
        if (!response.headersSent) response.writeHead(500);
        response.end();
      });
    });
    // Without it, an answer streamed in parts waits on the client's delayed ACK, as it would for agent-read.
    listener.on("connection", (socket) => socket.setNoDelay(true));
    // Node closes a keep-alive connection after 5 idle seconds; agent-read's server (hyper) keeps it open, and the
    // load client's connections wait longer than that between phases.
    listener.keepAliveTimeout = 0;
    listener.listen(Number(process.env.OVER_HTTP_PORT), "127.0.0.1");
  }
}

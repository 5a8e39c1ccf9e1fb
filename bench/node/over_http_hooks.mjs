// Module hook for over_http.mjs: server-filesystem's import of the SDK's stdio transport resolves to
// over_http_transport.mjs; every other import resolves as usual.
const STDIO = "@modelcontextprotocol/sdk/server/stdio.js";

export async function resolve(specifier, context, nextResolve) {
  if (specifier === STDIO && context.parentURL?.includes("/server-filesystem/")) {
    return { url: new URL("./over_http_transport.mjs", import.meta.url).href, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

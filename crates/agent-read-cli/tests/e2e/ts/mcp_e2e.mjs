// End-to-end test of `agent-read mcp` with the official MCP TypeScript SDK's client, the one most MCP hosts are built
// on. Run by crates/agent-read-cli/tests/e2e/run_ts.sh (`node --test`), against the binary named by $AGENT_READ_BIN.
//
// Beside what the Python e2e covers, this client checks every `structuredContent` it receives against the tool's
// `outputSchema` (with Ajv), so each kind of answer read here (text, directory, image, notebook, error, read_many)
// proves that the schema the server publishes holds for what it sends.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';

const binary = process.env.AGENT_READ_BIN;
if (!binary) throw new Error('set AGENT_READ_BIN to the agent-read binary to test (crates/agent-read-cli/tests/e2e/run_ts.sh does)');
const crateVersion = fs
  .readFileSync(new URL('../../../../../Cargo.toml', import.meta.url), 'utf8')
  .match(/^version = "([^"]+)"/m)[1];

const BIG_LINES = 1200;
const PAGE = 250;
// A 4×3 RGB PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAIAAAA7ljmRAAAAKklEQVR4nA3HMQEAMAzDMAMriMDpaSgBUYCbPgEOLh5CnLjx8lOnbr36AOO3DflsbMvSAAAAAElFTkSuQmCC',
  'base64',
);
const SECRET = 'OUTSIDE-THE-ROOT-do-not-show';
const HELLO = 'Hello, agent-read!\nsecond line ünïcödé ✓\n';

/** The files every test reads: `root` is the server's --root, holding the client roots (a client's roots only narrow
 * the configured ones); `elsewhere` lies beside it. */
function makeWorkspace() {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-read-e2e-ts-'));
  const at = (...parts) => path.join(base, ...parts);
  for (const dir of ['workspace/tree/sub', 'elsewhere', 'workspace/client-root-a', 'workspace/client root b']) {
    fs.mkdirSync(at(dir), { recursive: true });
  }
  fs.writeFileSync(at('workspace/hello.txt'), HELLO);
  const big = Array.from({ length: BIG_LINES }, (_, i) => (i % 97 === 0 ? '' : `line ${i + 1}\tof big`)).join('\n');
  fs.writeFileSync(at('workspace/big.txt'), big + '\n');
  fs.writeFileSync(at('workspace/tree/a.txt'), 'alpha\n');
  fs.writeFileSync(at('workspace/tree/b.txt'), 'bravo\n');
  fs.writeFileSync(at('workspace/tree/sub/inner.txt'), 'inner\n');
  fs.writeFileSync(at('workspace/pixel.png'), PNG);
  const notebook = {
    cells: [
      { cell_type: 'markdown', metadata: {}, source: ['# Title'] },
      { cell_type: 'code', metadata: {}, execution_count: 1, source: ['print(1 + 1)'], outputs: [] },
    ],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5,
  };
  fs.writeFileSync(at('workspace/note.ipynb'), JSON.stringify(notebook));
  // Short lines, then 64 GiB of holes: a read that scans it runs for minutes unless it is cancelled.
  fs.writeFileSync(at('workspace/huge.log'), 'line\n'.repeat(20_000));
  fs.truncateSync(at('workspace/huge.log'), 64 * 2 ** 30);
  fs.writeFileSync(at('elsewhere/secret.txt'), SECRET + '\n');
  fs.writeFileSync(at('workspace/client-root-a/from_a.txt'), 'from client root a\n');
  fs.writeFileSync(at('workspace/client root b/from_b.txt'), 'from client root b\n');
  const [rootA, rootB] = [at('workspace/client-root-a'), at('workspace/client root b')];
  return { base, root: at('workspace'), rootA, rootB, big: big + '\n' };
}

const ws = makeWorkspace();
after(() => fs.rmSync(ws.base, { recursive: true, force: true }));

/** Starts `agent-read mcp --http 127.0.0.1:0` and resolves to its URL, read from the line it prints when serving. */
function startHttpServer(stateless, extra = []) {
  const args = ['mcp', '--root', ws.root, '--http', '127.0.0.1:0', ...(stateless ? ['--stateless'] : []), ...extra];
  const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no serving line within 10 s; stderr:\n${log}`)), 10_000);
    child.stderr.on('data', (chunk) => {
      log += chunk;
      // Only a whole line: its end may not have arrived yet ("… at http://127").
      const found = log.match(/serving MCP over streamable HTTP at (http:\/\/\S+) .*\n/);
      if (found) {
        clearTimeout(timer);
        resolve(new URL(found[1]));
      }
    });
    child.on('exit', (code) => reject(new Error(`the server exited (${code}) before serving; stderr:\n${log}`)));
  });
  return { child, url };
}

/** A connected client; `roots` (directories) makes it offer roots, which `offered` can change later. */
async function connect(transport, roots) {
  const offered = { directories: roots ?? [], asked: 0 };
  const capabilities = roots ? { roots: { listChanged: true } } : {};
  const client = new Client({ name: 'agent-read-e2e-ts', version: '1.0.0' }, { capabilities });
  if (roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      offered.asked += 1;
      return { roots: offered.directories.map((dir) => ({ uri: pathToFileURL(dir).href, name: path.basename(dir) })) };
    });
  }
  await client.connect(transport());
  // Listing the tools also makes the client check every later structuredContent against the output schemas.
  await client.listTools();
  return { client, offered };
}

const textOf = (result) => result.content.filter((block) => block.type === 'text').map((block) => block.text).join('');
const read = (client, args, options) => client.callTool({ name: 'read', arguments: args }, undefined, options);

function expectOk(result, what) {
  assert.equal(result.isError ?? false, false, `${what}: ${textOf(result)}`);
  assert.equal(result.structuredContent.ok, true, what);
  return result.structuredContent;
}

function expectError(result, code, what) {
  assert.equal(result.isError, true, `${what} should fail: ${textOf(result)}`);
  assert.equal(result.structuredContent.error_code, code, `${what}: ${textOf(result)}`);
  assert.ok(textOf(result).startsWith(`${code}: `), `${what}: the text leads with the code: ${textOf(result)}`);
  return result.structuredContent;
}

/** Reads `file` until it succeeds (ok) or fails (not ok): the server follows roots changes asynchronously. */
async function eventually(client, file, ok, why) {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const result = await read(client, { path: file });
    if (result.structuredContent.ok === ok) return result.structuredContent;
    if (Date.now() > deadline) assert.fail(`${why}: ${file} still answers ${textOf(result)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The checks every transport passes with a client that offers no roots (so --root serves). */
function readsBeneathRoot(transport) {
  let client;
  before(async () => ({ client } = await connect(transport)));
  after(async () => client?.close());

  it('names itself and lists both tools with their schemas and hints', async () => {
    assert.deepEqual(client.getServerVersion(), { name: 'agent-read', version: crateVersion });
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name), ['read', 'read_many']);
    for (const tool of tools) {
      assert.equal(tool.annotations.readOnlyHint, true, tool.name);
      assert.equal(tool.annotations.idempotentHint, true, tool.name);
      assert.equal(tool.outputSchema.type, 'object', tool.name);
    }
    assert.deepEqual(tools[0].inputSchema.required, ['path']);
  });

  it('reads a text file as numbered lines with its envelope', async () => {
    const result = await read(client, { path: 'hello.txt' });
    const structured = expectOk(result, 'hello.txt');
    const footer = `(lines 1-2 of 2 · ${Buffer.byteLength(HELLO)} B · end of file)`;
    assert.equal(textOf(result), `1: Hello, agent-read!\n2: second line ünïcödé ✓\n${footer}`);
    assert.equal(structured.kind, 'text');
    assert.equal(structured.meta.total_lines, 2);
  });

  it('pages through a long file by the footer’s next offset, losing nothing', async () => {
    let offset = 1;
    const lines = [];
    for (let pages = 0; ; pages += 1) {
      assert.ok(pages <= BIG_LINES / PAGE + 1, 'paging did not end');
      const result = await read(client, { path: 'big.txt', offset, limit: PAGE });
      const { meta } = expectOk(result, `big.txt at ${offset}`);
      const text = textOf(result);
      const window = text.slice(0, text.lastIndexOf('\n('));
      for (const [index, line] of window.split('\n').entries()) {
        assert.ok(line.startsWith(`${offset + index}: `), `line ${offset + index}: ${line}`);
        lines.push(line.slice(`${offset + index}: `.length));
      }
      if (meta.next_offset == null) break;
      assert.ok(text.endsWith(`next: offset=${meta.next_offset} limit=${PAGE})`), text.slice(-80));
      offset = meta.next_offset;
    }
    assert.equal(lines.join('\n') + '\n', ws.big);
  });

  it('lists a directory', async () => {
    const result = await read(client, { path: 'tree' });
    const structured = expectOk(result, 'tree');
    assert.equal(structured.kind, 'directory');
    assert.deepEqual(structured.entries.map((entry) => entry.name), ['a.txt', 'b.txt', 'sub']);
    assert.ok(textOf(result).endsWith('(entries 1-3 of 3 · end of directory)'), textOf(result));
  });

  it('sends an image as an image content block', async () => {
    const result = await read(client, { path: 'pixel.png' });
    const structured = expectOk(result, 'pixel.png');
    const images = result.content.filter((block) => block.type === 'image');
    assert.equal(images.length, 1, JSON.stringify(result.content).slice(0, 300));
    assert.equal(images[0].mimeType, 'image/png');
    assert.deepEqual(Buffer.from(images[0].data, 'base64'), PNG);
    assert.deepEqual([structured.meta.original_width, structured.meta.original_height], [4, 3]);
    assert.equal(structured.meta.encoding, "the file's own bytes");
    assert.equal(typeof structured.meta.estimated_tokens.anthropic, 'number');
  });

  it('sends a region of an image at full resolution as an image content block', async () => {
    const result = await read(client, { path: 'pixel.png', region: [1, 1, 3, 3] });
    const structured = expectOk(result, 'pixel.png region');
    const images = result.content.filter((block) => block.type === 'image');
    assert.equal(images.length, 1, JSON.stringify(result.content).slice(0, 300));
    assert.deepEqual(structured.meta.region, [1, 1, 3, 3]);
    assert.deepEqual([structured.attachments[0].width, structured.attachments[0].height], [2, 2]);
    assert.match(textOf(result), / · region \[1,1,3,3\] at full resolution: 2×2, /);
    const outside = expectError(await read(client, { path: 'pixel.png', region: [0, 0, 5, 3] }), 'INVALID_RANGE', 'a region past the image');
    assert.match(outside.error, /pixel.png is 4×3 pixels/);
  });

  it('renders a notebook’s cells', async () => {
    const result = await read(client, { path: 'note.ipynb' });
    expectOk(result, 'note.ipynb');
    assert.match(textOf(result), /# Title/);
    assert.match(textOf(result), /print\(1 \+ 1\)/);
  });

  it('answers failures as tool errors that say what to do next', async () => {
    const missing = expectError(await read(client, { path: 'helo.txt' }), 'NOT_FOUND', 'helo.txt');
    assert.ok(missing.suggestions.includes('hello.txt'), JSON.stringify(missing));
    for (const outside of ['../elsewhere/secret.txt', path.join(ws.base, 'elsewhere/secret.txt')]) {
      const result = await read(client, { path: outside });
      expectError(result, 'OUTSIDE_ROOT', outside);
      assert.ok(!JSON.stringify(result).includes(SECRET), 'nothing of the outside file');
    }
    const invalid = expectError(await read(client, { path: 'hello.txt', limit: 0 }), 'INVALID_PARAM', 'limit 0');
    assert.match(invalid.error, /`limit`/);
  });

  it('reads several files in one answer with read_many', async () => {
    const result = await client.callTool({ name: 'read_many', arguments: { paths: ['hello.txt', 'tree/*.txt'] } });
    const structured = expectOk(result, 'read_many');
    assert.equal(structured.kind, 'many');
    assert.deepEqual(structured.files.map((file) => file.path), ['hello.txt', 'tree/a.txt', 'tree/b.txt']);
    assert.ok(textOf(result).startsWith('==> hello.txt <==\n1: Hello, agent-read!\n'), textOf(result));
  });

  it('refuses a tool it does not have', async () => {
    const result = await client.callTool({ name: 'write', arguments: { path: 'hello.txt' } }).catch((error) => error);
    const said = result instanceof Error ? result.message : textOf(result);
    assert.ok(result instanceof Error || result.isError, said);
    assert.match(said, /write/);
  });
}

/** A server whose reads are logged (and may take ten minutes), to watch a read stop when the client cancels it. */
function auditedArgs() {
  const audit = path.join(fs.mkdtempSync(path.join(ws.base, 'audit-')), 'audit.jsonl');
  return { audit, args: ['--audit-log', audit, '--timeout-ms', '600000'] };
}

/** The audit log once it holds `lines` lines, or what it holds after 10 s. */
async function auditLines(audit, lines) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const logged = fs.existsSync(audit) ? fs.readFileSync(audit, 'utf8').split('\n').filter(Boolean) : [];
    if (logged.length >= lines || Date.now() > deadline) return logged;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A read the client gives up on (an AbortSignal, as hosts do when the user interrupts) stops, and others go on. */
function stopsACancelledRead(transport, audit) {
  it('stops a read the client cancels, while other reads go on', async () => {
    const { client } = await connect(transport);
    try {
      const controller = new AbortController();
      const slow = read(client, { path: 'huge.log' }, { signal: controller.signal }).then(
        () => 'answered',
        (error) => error,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      expectOk(await read(client, { path: 'hello.txt' }), 'a read beside the slow one');
      const during = await auditLines(audit, 1);
      assert.equal(during.length, 1, `only the quick read has finished: ${during}`);
      controller.abort('no longer needed');
      assert.ok((await slow) instanceof Error, 'the cancelled call is rejected on the client');
      // Without cancellation the scan of 64 GiB would go on for minutes.
      const logged = await auditLines(audit, 2);
      assert.match(logged[1] ?? '', /"outcome":"CANCELLED"/, logged.join('\n'));
      expectOk(await read(client, { path: 'hello.txt' }), 'a read after the cancelled one');
    } finally {
      await client.close();
    }
  });
}

/** A client that offers roots is served beneath them, and followed when it changes them. */
function followsClientRoots(transport) {
  it('reads beneath the client’s roots and follows roots/list_changed', async () => {
    const { client, offered } = await connect(transport, [ws.rootA]);
    try {
      const found = await eventually(client, 'from_a.txt', true, 'the client’s root was not adopted');
      assert.equal(found.output, '1: from client root a\n(lines 1-1 of 1 · 19 B · end of file)');
      expectError(await read(client, { path: 'hello.txt' }), 'NOT_FOUND', 'hello.txt, only beneath --root');
      const asked = offered.asked;
      assert.ok(asked >= 1, 'the server asked for the roots');
      offered.directories = [ws.rootB];
      await client.sendRootsListChanged();
      await eventually(client, 'from_b.txt', true, 'roots/list_changed was not followed');
      await eventually(client, 'from_a.txt', false, 'the old root still answers');
      assert.ok(offered.asked > asked, 'the roots were asked again');
    } finally {
      await client.close();
    }
  });
}

describe('stdio', () => {
  const stdio = (extra = []) => () =>
    new StdioClientTransport({ command: binary, args: ['mcp', '--root', ws.root, ...extra], stderr: 'ignore' });
  readsBeneathRoot(stdio());
  followsClientRoots(stdio());
  const audited = auditedArgs();
  stopsACancelledRead(stdio(audited.args), audited.audit);
});

for (const stateless of [false, true]) {
  describe(stateless ? 'streamable HTTP, stateless' : 'streamable HTTP, sessions', () => {
    let server;
    let url;
    before(async () => {
      server = startHttpServer(stateless);
      url = await server.url;
    });
    after(() => server?.child.kill());
    const transport = () => new StreamableHTTPClientTransport(url);
    describe('reads', () => readsBeneathRoot(transport));
    if (!stateless) {
      // Not stateless: there, this client sends `notifications/cancelled` in a request of its own and keeps the
      // call's connection open, and without a session the notification cannot be told from another client's.
      describe('cancelling', () => {
        const audited = auditedArgs();
        let auditedServer;
        let auditedUrl;
        before(async () => {
          auditedServer = startHttpServer(false, audited.args);
          auditedUrl = await auditedServer.url;
        });
        after(() => auditedServer?.child.kill());
        stopsACancelledRead(() => new StreamableHTTPClientTransport(auditedUrl), audited.audit);
      });
      followsClientRoots(transport);
      it('keeps each session’s roots to itself', async () => {
        const a = await connect(transport, [ws.rootA]);
        const b = await connect(transport, [ws.rootB]);
        try {
          await eventually(a.client, 'from_a.txt', true, 'client a’s root');
          await eventually(b.client, 'from_b.txt', true, 'client b’s root');
          expectError(await read(a.client, { path: 'from_b.txt' }), 'NOT_FOUND', 'b’s file from a');
          expectError(await read(b.client, { path: 'from_a.txt' }), 'NOT_FOUND', 'a’s file from b');
        } finally {
          await Promise.all([a.client.close(), b.client.close()]);
        }
      });
    } else {
      it('keeps reads beneath --root for a client that offers roots (it cannot be asked without a session)', async () => {
        const { client, offered } = await connect(transport, [ws.rootA]);
        try {
          expectOk(await read(client, { path: 'hello.txt' }), 'hello.txt beneath --root');
          expectError(await read(client, { path: 'from_a.txt' }), 'NOT_FOUND', 'from_a.txt');
          assert.equal(offered.asked, 0);
        } finally {
          await client.close();
        }
      });
    }
  });
}

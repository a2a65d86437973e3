// Drives the bridge with the official MCP TypeScript SDK (@modelcontextprotocol/sdk),
// a client no one in this project wrote. Run by e2e/node_client_test.go; prints
// one JSON object on stdout that the Go test asserts on.
//
// Usage: BRIDGE_URL=http://127.0.0.1:PORT/mcp/SECRET node client.mjs SCENARIO
//   flash         connect, list tools, call deepseek_flash (TASK, MODE env) with
//                 an onprogress handler; prints {server, tools, result, progress}
//   connect-fail  connect and expect failure; prints {error, code}
//
// The URL comes from the environment, not argv, so the secret is not visible in
// the process list. Modules are resolved from MCP_NODE_MODULES (default: the
// project's .cache/npm/node_modules, filled by scripts/install.sh).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.MCP_NODE_MODULES || path.resolve(here, '../../.cache/npm/node_modules');
const require = createRequire(path.join(path.dirname(modules), 'resolve-from-here.js'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
// The package's exports map hides its package.json; read it by path.
const sdkVersion = JSON.parse(
  readFileSync(path.join(path.dirname(require.resolve('@modelcontextprotocol/sdk/client/index.js')), '../../../package.json'), 'utf8'),
).version;

function fail(msg) {
  process.stderr.write(`client.mjs: ${msg}\n`);
  process.exit(1);
}

const url = process.env.BRIDGE_URL;
if (!url) fail('BRIDGE_URL is not set');
const scenario = process.argv[2] || 'flash';

function newClient() {
  const client = new Client({ name: 'bridge-e2e-ts-sdk', version: sdkVersion });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  return { client, transport };
}

async function flash() {
  const { client, transport } = newClient();
  await client.connect(transport);
  const server = client.getServerVersion();
  const { tools } = await client.listTools();
  const progress = [];
  const result = await client.callTool(
    {
      name: 'deepseek_flash',
      arguments: { task: process.env.TASK || 'Say hello.', mode: process.env.MODE || 'analyze' },
    },
    undefined,
    {
      timeout: 60_000,
      onprogress: (p) => progress.push({ progress: p.progress, total: p.total, message: p.message }),
    },
  );
  const protocolVersion = transport.protocolVersion;
  await client.close();
  return {
    sdk_version: sdkVersion,
    node_version: process.versions.node,
    protocol_version: protocolVersion,
    server,
    tools: tools.map((t) => ({
      name: t.name,
      annotations: t.annotations ?? null,
      has_output_schema: Boolean(t.outputSchema),
    })),
    result,
    progress,
  };
}

async function connectFail() {
  const { client, transport } = newClient();
  try {
    await client.connect(transport);
  } catch (e) {
    return { error: String(e && e.message ? e.message : e), code: e && e.code !== undefined ? e.code : null };
  }
  await client.close();
  fail('connect succeeded, expected a failure');
}

const scenarios = { flash, 'connect-fail': connectFail };
if (!scenarios[scenario]) fail(`unknown scenario ${scenario}; want one of ${Object.keys(scenarios).join(', ')}`);
try {
  const out = await scenarios[scenario]();
  process.stdout.write(JSON.stringify(out) + '\n');
} catch (e) {
  fail(e && e.stack ? e.stack : String(e));
}

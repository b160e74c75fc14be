// The official MCP TypeScript SDK client driving toolhost serve --stdio,
// for the end-to-end tests in tests/e2e (issue 11, "Done when": real
// clients).
//
//   node client.mjs SCENARIO -- TOOLHOST_ARGV...
//
// The client starts the server command line itself (StdioClientTransport),
// in this process's working directory and with its whole environment, so
// the test's isolated home and compile cache reach the server. It runs the
// scenario, then prints one JSON object on stdout with what it observed:
//
//   {
//     "protocolVersion": "2025-11-25",
//     "tools": [{"name", "annotations", "inputSchema"}],     // scenario "list"
//     "calls": [{"name", "arguments", "isError", "text", "structuredContent",
//                "progress": [{"progress", "message"}]}],          // scenario "progress
//     "elicitations": [{"message", "mode", "requestedSchema", "answer"}]
//   }
//
// The test asserts on that object; this script asserts nothing. A failure
// of the protocol itself (a thrown error, a timeout) goes to stderr with
// exit code 1. The server's stderr passes through to this process's.
//
// The scenarios expect the workspace the test prepares: notes.txt holding
// "one\ntwo\nthree\nfour\nfive\n" and out.txt holding "before\n".

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

// A call waits at most this long, approval included: long enough for a
// slow shared machine, short enough that the test's own deadline is not
// reached first.
const callTimeoutMs = 45_000;

const patch = `LP1
F notes.txt
R
three
.
three, patched
.
END
`;

const written = 'line one\nline two\n';

// Each scenario: how the client answers elicitations (undefined: the
// client does not declare elicitation at all), whether it lists tools,
// and the calls it makes in order.
const scenarios = {
  list: { list: true, calls: [] },
  'read-range': {
    calls: [{ name: 'read_file', arguments: { path: 'notes.txt', start_line: 2, end_line: 3 } }],
  },
  patch: {
    answer: 'accept',
    calls: [
      { name: 'read_file', arguments: { path: 'notes.txt' } },
      { name: 'apply_patch', arguments: { patch } },
      { name: 'read_file', arguments: { path: 'notes.txt', start_line: 2, end_line: 4 } },
    ],
  },
  escape: {
    calls: [{ name: 'read_file', arguments: { path: '../x' } }],
  },
  'approve-write': { answer: 'accept', calls: writeCalls() },
  'decline-write': { answer: 'decline', calls: writeCalls() },
  'no-elicitation': { calls: writeCalls() },
  // The last line comes right before the result: the notification
  // carrying it must not be lost (typescript-sdk #2580).
  progress: {
    progress: true,
    calls: [{ name: 'run_command', arguments: { command: 'echo line1; sleep 0.3; echo line2; sleep 0.3; echo line3' } }],
  },
};

// writeCalls replaces out.txt after reading it, so the stale-file rule
// passes and only the approval decides.
function writeCalls() {
  return [
    { name: 'read_file', arguments: { path: 'out.txt' } },
    { name: 'write_file', arguments: { path: 'out.txt', content: written } },
  ];
}

function usage(msg) {
  process.stderr.write(
    `client.mjs: ${msg}\nusage: node client.mjs SCENARIO -- COMMAND [ARG...]\nscenarios: ${Object.keys(scenarios).join(', ')}\n`,
  );
  process.exit(2);
}

function parseArgs(argv) {
  const [name, sep, command, ...args] = argv;
  if (!name || !(name in scenarios)) usage(`unknown scenario ${JSON.stringify(name ?? '')}`);
  if (sep !== '--' || !command) usage('the server command line follows --');
  return { scenario: scenarios[name], command, args };
}

// newClient is the client: with an elicitation capability and a handler
// giving answer when answer is set, without either otherwise.
function newClient(answer, elicitations) {
  const capabilities = answer === undefined ? {} : { elicitation: {} };
  const client = new Client({ name: 'toolhost-e2e-ts', version: '1.0.0' }, { capabilities });
  if (answer !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const { message, mode, requestedSchema } = req.params;
      elicitations.push({ message, mode: mode ?? 'form', requestedSchema, answer });
      return answer === 'accept' ? { action: 'accept', content: {} } : { action: answer };
    });
  }
  return client;
}

// observe is what the test needs of a tools/call result: every text
// content joined, and anything that is not text named so a test can fail
// on it.
function observe(call, res) {
  const text = res.content
    .map((c) => (c.type === 'text' ? c.text : `[${c.type} content]`))
    .join('');
  return {
    name: call.name,
    arguments: call.arguments,
    isError: res.isError === true,
    text,
    structuredContent: res.structuredContent ?? null,
  };
}

async function main() {
  const { scenario, command, args } = parseArgs(process.argv.slice(2));
  const out = { protocolVersion: '', calls: [], elicitations: [] };
  const client = newClient(scenario.answer, out.elicitations);
  const transport = new StdioClientTransport({
    command,
    args,
    cwd: process.cwd(),
    env: process.env,
    stderr: 'inherit',
  });
  // The SDK has no getter for the negotiated version; after initialize it
  // tells a transport that has this method (stdio's has none).
  transport.setProtocolVersion = (v) => {
    out.protocolVersion = v;
  };
  await client.connect(transport);
  try {
    if (scenario.list) {
      const { tools } = await client.listTools();
      out.tools = tools.map(({ name, annotations, inputSchema }) => ({ name, annotations, inputSchema }));
    }
    for (const call of scenario.calls) {
      // With onprogress the SDK sends a progress token and hands each
      // notifications/progress of the call to it.
      const progress = [];
      const options = { timeout: callTimeoutMs };
      if (scenario.progress) options.onprogress = ({ progress: n, message }) => progress.push({ progress: n, message });
      const res = await client.callTool(call, undefined, options);
      out.calls.push({ ...observe(call, res), progress });
    }
  } finally {
    await client.close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((err) => {
  process.stderr.write(`client.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});

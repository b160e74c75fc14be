// The official MCP TypeScript SDK client driving toolhost serve, over
// stdio or streamable HTTP, for the end-to-end tests in host/internal/tests/e2e (issue
// 11, "Done when": real clients).
//
//   node client.mjs SCENARIO -- TOOLHOST_ARGV...
//   node client.mjs SCENARIO --url http://127.0.0.1:PORT/mcp --token TOKEN
//
// With --, the client starts the server command line itself
// (StdioClientTransport), in this process's working directory and with
// its whole environment, so the test's isolated home and compile cache
// reach the server. With --url it connects to a running `toolhost serve
// --http` (StreamableHTTPClientTransport), sending "Authorization: Bearer
// TOKEN". It runs the scenario, then prints one JSON object on stdout
// with what it observed:
//
//   {
//     "protocolVersion": "2025-11-25",
//     "tools": [{"name", "annotations", "inputSchema"}],     // scenario "list"
//     "calls": [{"name", "arguments", "isError", "text", "structuredContent",
//                "progress": [{"progress", "message"}]}],    // scenario "progress"
//     "elicitations": [{"message", "mode", "requestedSchema", "answer"}],
//     "cancel": {"output", "abortedAfterMs", "error",         // scenario "cancel"
//                "late": {"isError", "text"} | null, "lateAfterMs"}
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
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
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
  // The command prints its shell's pid and its child's, then waits; the
  // client learns both from the progress stream and aborts the request
  // (the SDK sends notifications/cancelled). The test checks both
  // processes are gone.
  cancel: {
    cancel: { name: 'run_command', arguments: { command: 'echo shell=$$; sleep 300.25 & echo child=$!; wait; touch finished' } },
    calls: [],
  },
};

// How long the cancel scenario waits for the command to print its pids,
// and then for the server's late answer to the aborted request.
const pidsTimeoutMs = 30_000;
const lateTimeoutMs = 10_000;

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
    `client.mjs: ${msg}\nusage: node client.mjs SCENARIO -- COMMAND [ARG...]\n       node client.mjs SCENARIO --url URL --token TOKEN\nscenarios: ${Object.keys(scenarios).join(', ')}\n`,
  );
  process.exit(2);
}

function parseArgs(argv) {
  const [name, sep, ...rest] = argv;
  if (!name || !(name in scenarios)) usage(`unknown scenario ${JSON.stringify(name ?? '')}`);
  if (sep === '--') {
    const [command, ...args] = rest;
    if (!command) usage('the server command line follows --');
    return { scenario: scenarios[name], command, args };
  }
  if (sep === '--url') {
    const [url, flag, token, ...extra] = rest;
    if (!url || flag !== '--token' || !token || extra.length > 0) usage('--url URL takes --token TOKEN and nothing after');
    return { scenario: scenarios[name], url, token };
  }
  usage('pass the server command line after --, or --url URL --token TOKEN');
}

// newTransport is stdio to a server it starts, or streamable HTTP to a
// running one with the bearer token.
function newTransport({ command, args, url, token }) {
  if (url) {
    return new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
  }
  return new StdioClientTransport({ command, args, cwd: process.cwd(), env: process.env, stderr: 'inherit' });
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

// lateResponses collects what the server answers to requests the client
// gave up on: the SDK drops such a response and reports it to onerror
// with the message's JSON, the only place a client sees it.
function lateResponses(client) {
  const prefix = 'Received a response for an unknown message ID: ';
  const late = [];
  const waiters = [];
  client.onerror = (err) => {
    const msg = String(err?.message ?? err);
    if (!msg.startsWith(prefix)) {
      process.stderr.write(`client.mjs: ${msg}\n`);
      return;
    }
    late.push(JSON.parse(msg.slice(prefix.length)));
    waiters.splice(0).forEach((w) => w());
  };
  // next resolves with the first late response, or null after ms.
  late.next = (ms) =>
    late.length > 0
      ? Promise.resolve(late[0])
      : new Promise((resolve) => {
          const timer = setTimeout(() => resolve(null), ms);
          waiters.push(() => {
            clearTimeout(timer);
            resolve(late[0]);
          });
        });
  return late;
}

// cancelCall runs call with onprogress until its output names the
// shell's and the child's pids, then aborts it: the SDK rejects the call
// at once and sends notifications/cancelled. It then waits for the
// server's answer to the aborted request, which only onerror sees.
async function cancelCall(client, call, late) {
  const res = { output: '', abortedAfterMs: 0, error: '', late: null, lateAfterMs: 0 };
  const abort = new AbortController();
  const start = Date.now();
  let learned;
  const pids = new Promise((resolve) => {
    learned = resolve;
  });
  const onprogress = ({ message }) => {
    res.output += message ?? '';
    if (/shell=\d+\n/.test(res.output) && /child=\d+\n/.test(res.output)) learned();
  };
  const pending = client.callTool(call, undefined, { timeout: callTimeoutMs, signal: abort.signal, onprogress });
  pending.catch(() => {}); // its outcome is read below, after the abort
  const timer = setTimeout(learned, pidsTimeoutMs);
  await Promise.race([pids, pending]);
  clearTimeout(timer);
  abort.abort('the test cancels the command');
  const aborted = Date.now();
  res.abortedAfterMs = aborted - start;
  try {
    const r = await pending;
    res.error = `the call was answered before the abort: ${JSON.stringify(r)}`;
  } catch (err) {
    res.error = String(err?.message ?? err);
  }
  const msg = await late.next(lateTimeoutMs);
  if (msg) {
    const r = msg.result ?? {};
    res.late = { isError: r.isError === true, text: (r.content ?? []).map((c) => c.text ?? '').join(''), error: msg.error ?? null };
    res.lateAfterMs = Date.now() - aborted;
  }
  return res;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const { scenario } = opts;
  const out = { protocolVersion: '', calls: [], elicitations: [] };
  const client = newClient(scenario.answer, out.elicitations);
  const late = lateResponses(client);
  const transport = newTransport(opts);
  // The SDK has no getter for the negotiated version; after initialize it
  // tells a transport that has this method (HTTP's sends it as a header
  // from then on, so it must still be called).
  const setVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    out.protocolVersion = v;
    setVersion?.(v);
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
    if (scenario.cancel) out.cancel = await cancelCall(client, scenario.cancel, late);
  } finally {
    // Over HTTP, end the session (DELETE) so the server frees its place
    // at once rather than when it expires.
    if (opts.url) await transport.terminateSession().catch(() => {});
    await client.close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((err) => {
  process.stderr.write(`client.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});

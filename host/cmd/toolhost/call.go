package main

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/host/internal/server"
)

type callFlags struct {
	runFlags
	args, argsFile string
	conversation   string
	id             string
	format         string
}

// Output formats of toolhost call.
const (
	callFormatResult = "result" // the result record, with batch and journal ids
	callFormatJSON   = "json"   // what an MCP client receives: content, structuredContent, isError
	callFormatText   = "text"   // the text a model reads, alone
)

func newCallCommand(g *globals) *cobra.Command {
	f := &callFlags{}
	cmd := &cobra.Command{
		Use:   "call <tool> (--args JSON | --args-file FILE)",
		Short: "Run one tool call and print its result as JSON",
		Long: `Run one tool call and print its result as JSON:
  {"id", "name", "ok": true, "content", "structured", "batch_id", "journal_id"} or
  {"id", "name", "ok": false, "error": {"kind", "message", "details"}, "batch_id", "journal_id"}
batch_id and journal_id name the batch and the call in the journal, for toolhost journal show
and toolhost undo; id is --id, or the journal id when --id is not given. structured is the
output as one JSON object, when the tool gives one beside its text.
--format json prints what an MCP client receives instead: {"content": text,
"structuredContent": object, "isError": bool}; --format text prints the text alone
(a failure's as "Kind: message").
Exit status: 0 when the call succeeded, 1 when the tool returned an error, 2 for usage errors.
Calls with the same --conversation share what was read, which stale-file protection checks
before an existing file is overwritten.

The approval policy applies: a call that needs confirmation is asked about on the terminal,
or denied when stdin is not a terminal; --allow TOOL approves TOOL's calls (and lifts the
default denial of run_command, NFR-SEC-06).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("call takes exactly one tool name, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runCall(cmd, g, f, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.args, "args", "", "arguments as a JSON object")
	fl.StringVar(&f.argsFile, "args-file", "", "file holding the arguments as a JSON object (- for stdin)")
	fl.StringVar(&f.conversation, "conversation", "default", "conversation id: calls with the same id share their read cache")
	fl.StringVar(&f.id, "id", "", "the call's id as a model would give it (default: its journal id, unique in the journal)")
	fl.StringVar(&f.format, "format", callFormatResult, "output: result (the result record), json (content, structuredContent, isError, as over MCP) or text (the text alone)")
	f.runFlags.register(fl)
	return cmd
}

func (f *callFlags) arguments() (json.RawMessage, error) {
	var raw []byte
	switch {
	case f.args != "" && f.argsFile != "":
		return nil, usageErrorf("give either --args or --args-file, not both")
	case f.args != "":
		raw = []byte(f.args)
	case f.argsFile == "-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, usageErrorf("reading arguments from stdin: %v", err)
		}
		raw = b
	case f.argsFile != "":
		b, err := os.ReadFile(f.argsFile)
		if err != nil {
			return nil, usageErrorf("--args-file: %v", err)
		}
		raw = b
	default:
		raw = []byte("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, usageErrorf("arguments must be a JSON object: %v", err)
	}
	return raw, nil
}

func runCall(cmd *cobra.Command, g *globals, f *callFlags, tool string) error {
	ctx := cmd.Context()
	raw, err := f.arguments()
	if err != nil {
		return err
	}
	switch f.format {
	case callFormatResult, callFormatJSON, callFormatText:
	default:
		return usageErrorf("--format %q: give result, json or text", f.format)
	}
	h, err := openHost(ctx, g, &f.runFlags)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	if err := checkDenylisted(h, tool); err != nil {
		return err
	}
	// The batch is named before it is planned, so that a call given no
	// id is named by its journal id, which nothing else shares.
	b := engine.Batch{ID: engine.NewBatchID(), Conversation: f.conversation}
	journalID := journal.CallJournalID(b.ID, 1)
	b.Calls = []engine.Call{{ID: cmp.Or(f.id, journalID), Name: tool, Arguments: raw}}
	p, results := h.Process(ctx, b, host.BatchOptions{Approver: newApprover(h, b.Conversation, f.allow), Events: f.streamEvents()})
	res := results[0]
	if err := printCall(h, f.format, callOutput{Result: res, BatchID: p.Batch.ID, JournalID: journalID}); err != nil {
		return err
	}
	if !res.OK {
		return &exitError{code: exitToolError, err: errSilent}
	}
	return nil
}

// callOutput is what `toolhost call` prints: the result, and where the
// journal keeps the call.
type callOutput struct {
	engine.Result
	BatchID   string `json:"batch_id"`
	JournalID string `json:"journal_id"`
}

// printCall prints a call's result in format.
func printCall(h *host.Host, format string, out callOutput) error {
	if format == callFormatResult {
		return printJSON(out)
	}
	// Formatted as the MCP server formats it, by the rule it follows for
	// this tool (an unknown tool has no manifest: no composed output).
	var m abi.Manifest
	for _, t := range h.Tools() {
		if t.Name == out.Name {
			m = t
		}
	}
	res := server.MCPResult(out.Result, m)
	var text string
	if len(res.Content) == 1 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			text = t.Text
		}
	}
	if format == callFormatText {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		_, err := os.Stdout.WriteString(text)
		return err
	}
	return printJSON(struct {
		Content           string `json:"content"`
		StructuredContent any    `json:"structuredContent,omitempty"`
		IsError           bool   `json:"isError"`
	}{text, res.StructuredContent, res.IsError})
}

// checkDenylisted refuses, as a usage error, a tool the policy denies
// unless --allow names it (NFR-SEC-06): one call has nothing else to run.
func checkDenylisted(h *host.Host, tool string) error {
	if h.Inside(inside.Key{}).Engine.Denylisted(tool) {
		return usageErrorf("%s is denied by tools.approval.denylist (it is denied by default); to run it anyway, pass --allow %s", tool, tool)
	}
	return nil
}

// streamEvents copies streamed output to stderr with --stream. The engine
// sanitized each chunk, with a sequence a chunk boundary cut held back
// until it is whole, so it goes to the terminal as is.
func (f *runFlags) streamEvents() engine.EventSink {
	if !f.stream {
		return nil
	}
	return engine.EventSinkFunc(func(_ context.Context, ev engine.Event) error {
		if ev.Kind == engine.EventStdoutChunk || ev.Kind == engine.EventStderrChunk {
			_, err := os.Stderr.WriteString(ev.Chunk)
			return err
		}
		return nil
	})
}

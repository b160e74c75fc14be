package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// batchFile is the input of `toolhost batch`, the shape the HTTP API takes.
type batchFile struct {
	ConversationID string        `json:"conversation_id"`
	TurnID         string        `json:"turn_id"`
	Calls          []engine.Call `json:"calls"`
}

type batchOutput struct {
	BatchID string        `json:"batch_id"`
	Results []batchResult `json:"results"`
}

// batchResult is one call's result, with the call's journal id: the
// calls' own ids come from the model and are unique only in the batch.
type batchResult struct {
	engine.Result
	JournalID string `json:"journal_id"`
}

func newBatchCommand(g *globals) *cobra.Command {
	rf := &runFlags{}
	var file string
	cmd := &cobra.Command{
		Use:   "batch --file CALLS.json",
		Short: "Run a batch of tool calls through the tool loop and print every result in call order",
		Long: `Run a batch of tool calls as one model response: plan every call (validation, policy),
ask for the approvals it needs, then run them in order. The file holds
  {"conversation_id": "...", "turn_id": "...", "calls": [{"id", "name", "arguments"}, ...]}
and the output is {"batch_id", "results": [...]}, one result per call, in call order, each
with its "journal_id": the id toolhost journal show and toolhost undo take for that call.
Exit status: 0 when every call succeeded, 1 when any failed, 2 for usage errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := readBatch(file)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			h, err := openHost(ctx, g, rf)
			if err != nil {
				return err
			}
			defer h.Close(ctx)
			p, results := h.Process(ctx, b, host.BatchOptions{Approver: newApprover(h, b.Conversation, rf.allow), Events: rf.streamEvents()})
			out := batchOutput{BatchID: p.Batch.ID, Results: make([]batchResult, len(results))}
			for i, r := range results {
				out.Results[i] = batchResult{Result: r, JournalID: journal.CallJournalID(p.Batch.ID, i+1)}
			}
			if err := printJSON(out); err != nil {
				return err
			}
			for _, r := range results {
				if !r.OK {
					return &exitError{code: exitToolError, err: errSilent}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "the batch as JSON (- for stdin)")
	rf.register(cmd.Flags())
	return cmd
}

func readBatch(file string) (engine.Batch, error) {
	var raw []byte
	var err error
	switch file {
	case "":
		return engine.Batch{}, usageErrorf("batch needs --file FILE (or --file - for stdin)")
	case "-":
		raw, err = io.ReadAll(os.Stdin)
	default:
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		return engine.Batch{}, usageErrorf("--file: %v", err)
	}
	if file == "-" {
		file = "standard input"
	}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' {
		return engine.Batch{}, usageErrorf("%s is not a batch: want a JSON object {\"conversation_id\", \"turn_id\"?, \"calls\": [{\"id\", \"name\", \"arguments\"}]}", file)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var bf batchFile
	if err := dec.Decode(&bf); err != nil {
		return engine.Batch{}, usageErrorf("%s is not a batch (want {\"conversation_id\", \"turn_id\"?, \"calls\": [{\"id\", \"name\", \"arguments\"}]}): %v", file, err)
	}
	if bf.ConversationID == "" {
		return engine.Batch{}, usageErrorf("%s: conversation_id is missing; calls in one conversation share what was read", file)
	}
	if len(bf.Calls) == 0 {
		return engine.Batch{}, usageErrorf("%s: calls is empty", file)
	}
	return engine.Batch{Conversation: bf.ConversationID, Turn: bf.TurnID, Calls: bf.Calls}, nil
}

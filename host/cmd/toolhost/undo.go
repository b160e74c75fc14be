package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
)

type undoFlags struct {
	runFlags
	dryRun bool
	format string
	json   bool // the deprecated --json, --format json
}

// `toolhost undo`: restore what a call or batch changed.
func newUndoCommand(g *globals) *cobra.Command {
	f := &undoFlags{}
	cmd := &cobra.Command{
		Use:   "undo ID [--dry-run]",
		Short: "Restore every file a tool call or batch changed to what it held before",
		Long: `Restore every file a call (or a whole batch) changed through toolhost to the content and
mode it had before, from the journal: a file the call created is removed. All files change
or none does, in one transaction. The undo is refused, changing nothing, when a file changed
after the call changed it (StaleFile, listing each), when a change was larger than
[journal] max_preimage_bytes and so was not kept, or when a file is now outside the allowed
roots or protected. The undo is journaled as a call of its own: undoing that call re-applies.

ID is a batch id, a call's journal id (BATCH.N, as toolhost call, toolhost batch and
toolhost journal show print it), or the id a call's client gave it (a model's call_1) when
only one call of the journal has it: an id several calls have is refused, listing them
newest first with their journal ids.
Exit status: 0 when the files were restored (or, with --dry-run, could be), 1 when the undo
was refused, 2 for usage errors.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("undo takes exactly one call or batch id, got %d arguments; toolhost journal list shows the batches, toolhost journal show BATCH their calls", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runUndo(cmd, g, f, args[0]) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", false, "check everything and say what would be restored, changing nothing")
	fl.StringVar(&f.format, "format", "text", "text or json")
	fl.BoolVar(&f.json, "json", false, "the report as JSON: --format json")
	fl.MarkDeprecated("json", "use --format json")
	fl.StringArrayVar(&f.roots, "root", nil, "allowed root directory (repeatable; the first is the working directory; default: tools.sandbox.allowed_roots)")
	return cmd
}

func runUndo(cmd *cobra.Command, g *globals, f *undoFlags, id string) error {
	if f.json {
		if cmd.Flags().Changed("format") && f.format != "json" {
			return usageErrorf("--json and --format %s disagree; give --format json or --format text", f.format)
		}
		f.format = "json"
	}
	if err := checkFormat(f.format); err != nil {
		return err
	}
	ctx := cmd.Context()
	h, err := openHost(ctx, g, &f.runFlags)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	rep, err := h.Undo(ctx, id, host.UndoOptions{DryRun: f.dryRun})
	var amb *host.AmbiguousIDError
	switch {
	case errors.As(err, &amb):
		cands := make([]candidate, len(amb.Candidates))
		for i, c := range amb.Candidates {
			cands[i] = candidate{JournalID: c.JournalID, Tool: c.Tool, Path: c.Path, Time: c.Time}
		}
		return &exitError{code: exitToolError, err: ambiguousID("undo", id, amb.Total, cands, "nothing was changed")}
	case err != nil:
		// The message names files and ids a model chose: printError
		// strips their control sequences, and its lines stay lines.
		return &exitError{code: exitToolError, err: err}
	}
	if f.format == "json" {
		return printJSON(rep)
	}
	printUndo(os.Stdout, rep)
	return nil
}

// printUndo says what an undo did, or would do, for a person.
func printUndo(w io.Writer, rep *host.UndoReport) {
	what := "batch " + vis(rep.BatchID)
	switch {
	case rep.CallJournalID == "":
	case rep.CallID == rep.CallJournalID:
		what = fmt.Sprintf("call %s (batch %s)", vis(rep.CallJournalID), vis(rep.BatchID))
	default:
		what = fmt.Sprintf("call %s, its client's %s (batch %s)", vis(rep.CallJournalID), vis(rep.CallID), vis(rep.BatchID))
	}
	verb := map[host.UndoAction]string{host.UndoRestore: "restored", host.UndoRemove: "removed", host.UndoUnchanged: "unchanged"}
	if rep.DryRun {
		fmt.Fprintf(w, "dry run: undoing %s would change:\n", what)
		verb = map[host.UndoAction]string{host.UndoRestore: "restore", host.UndoRemove: "remove", host.UndoUnchanged: "leave unchanged"}
	} else {
		fmt.Fprintf(w, "undid %s:\n", what)
	}
	for _, f := range rep.Files {
		fmt.Fprintf(w, "  %s %s\n", verb[f.Action], vis(f.Path))
	}
	switch {
	case rep.UndoCallID != "":
		fmt.Fprintf(w, "journaled as call %s (batch %s); toolhost undo %[1]s re-applies the change\n", vis(rep.UndoCallID), vis(rep.UndoBatchID))
	case !rep.DryRun:
		fmt.Fprintln(w, "every file was already as it was before; nothing was changed")
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/host/internal/server"
)

// `toolhost journal`: the history of tool batches and
// the user's choice for a batch a crash interrupted (item 3, FR-RES-05).
// These commands open the journal without loading any plugin, and they
// never run a call: recover only records a choice.

// Limits of what show prints of a call unless --full.
const (
	showArgBytes    = 400
	showResultLines = 20
	showResultBytes = 2000
)

func newJournalCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "Show the history of tool batches, export it, and keep or discard what a crash interrupted",
		Long: `The journal (journal.db in the state directory, or [journal] path) records every batch
toolhost call, toolhost batch and toolhost serve run: each call's arguments (secrets
redacted), decision, start, result and the files it changed. A batch a crash left
unfinished is marked interrupted when toolhost next starts; nothing of it is re-run.
Exit status: 0 on success, 2 for an unknown id, a wrong flag or an unreadable journal.`,
	}
	cmd.AddCommand(newJournalListCommand(g), newJournalShowCommand(g), newJournalExportCommand(g), newJournalRecoverCommand(g), newJournalCheckCommand(g))
	return cmd
}

func newJournalCheckCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Check the journal database page by page for damage",
		Long: `Runs SQLite's quick integrity check over the whole journal, which reads every page.
Commands that open the journal on every run do not, to start quickly; damage they meet
later is reported by the operation that meets it. Exit status: 0 when the journal is
sound, 2 when it is damaged (the message says which file and how to move it aside).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			j, err := openJournal(ctx, g)
			if err != nil {
				return err
			}
			defer j.Close()
			if err := j.Check(ctx); err != nil {
				return usageErrorf("%v", err)
			}
			fmt.Printf("journal %s: sound\n", j.Path())
			return nil
		},
	}
}

// openJournal opens the journal the configuration and --state-dir name,
// recovering what a crash left open, without loading any plugin. The
// caller closes it.
func openJournal(ctx context.Context, g *globals) (*journal.Journal, error) {
	loaded, err := g.settings()
	if err != nil {
		return nil, err
	}
	stateDir, err := g.state()
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	cfg := loaded.Config.Journal
	if cfg.Path == "" {
		// A journal is not created where nothing ever ran: a mistyped
		// --state-dir must not look like an empty history.
		if _, err := os.Stat(stateDir); errors.Is(err, fs.ErrNotExist) {
			return nil, usageErrorf("no journal: the state directory %s does not exist, so no batch was recorded there; "+
				"pass the --state-dir (or $TOOLHOST_STATE_DIR) that toolhost call, batch or serve used", stateDir)
		}
	}
	j, err := inside.OpenJournal(ctx, cfg, stateDir, g.logger())
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if j == nil {
		return nil, usageErrorf("no journal: there is no state directory and no [journal] path; pass --state-dir")
	}
	return j, nil
}

// vis is s as a terminal may show it: what the journal holds came from a
// model (call ids, tool names, paths, results), which can put escape
// sequences and bidi controls in any of them.
func vis(s string) string { return engine.Visible(s) }

// checkFormat refuses a --format other than text or json.
func checkFormat(format string) error {
	if format != "text" && format != "json" {
		return usageErrorf("--format %q: want text or json", format)
	}
	return nil
}

func newJournalListCommand(g *globals) *cobra.Command {
	var conversation, since, state, format string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the journal's batches, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := journal.Filter{Conversation: conversation, State: journal.State(state), Limit: limit}
			if err := checkFormat(format); err != nil {
				return err
			}
			if state != "" && !slices.Contains(server.JournalStates(), state) {
				return usageErrorf("--state %q: want one of %s", state, strings.Join(server.JournalStates(), ", "))
			}
			if limit < 0 {
				return usageErrorf("--limit %d: want a positive number, or 0 for the default (%d)", limit, journal.DefaultListLimit)
			}
			if since != "" {
				t, err := server.ParseSince(since, time.Now())
				if err != nil {
					return usageErrorf("--since %v", err)
				}
				f.Since = t
			}
			ctx := cmd.Context()
			j, err := openJournal(ctx, g)
			if err != nil {
				return err
			}
			defer j.Close()
			list, err := j.ListBatches(ctx, f)
			if err != nil {
				return usageErrorf("%v", err)
			}
			if format == "json" {
				views := make([]server.JournalSummary, len(list))
				for i, s := range list {
					views[i] = server.ViewJournalSummary(s)
				}
				if err := printJSON(map[string]any{"batches": views}); err != nil {
					return err
				}
				printRecoverHints(os.Stderr, list)
				return nil
			}
			return printBatchList(os.Stdout, j.Path(), list)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&conversation, "conversation", "", "only this conversation's batches")
	fl.StringVar(&since, "since", "", "only batches created since: an RFC 3339 time, a date (2025-06-01) or how long ago (2h, 7d)")
	fl.StringVar(&state, "state", "", "only batches in this state: "+strings.Join(server.JournalStates(), ", "))
	fl.IntVar(&limit, "limit", 0, fmt.Sprintf("at most this many batches (default %d)", journal.DefaultListLimit))
	fl.StringVar(&format, "format", "text", "text (a table) or json")
	return cmd
}

// printBatchList prints the batches as an aligned table, then a hint for
// each interrupted one.
func printBatchList(w io.Writer, path string, list []journal.Summary) error {
	if len(list) == 0 {
		_, err := fmt.Fprintf(w, "no batch in journal %s matches\n", path)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BATCH\tCREATED\tSTATE\tTOOL\tPATH\tCONVERSATION\tCALLS\tFAILED\tUNFINISHED")
	for _, s := range list {
		tool := s.Tool
		if s.Calls > 1 {
			tool += fmt.Sprintf(" +%d", s.Calls-1)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", vis(s.ID), localTime(s.Created), s.State, vis(orDash(tool)), vis(orDash(showPath(s.Path))),
			vis(orDash(s.Conversation)), s.Calls, s.Failed, s.Unfinished)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printRecoverHints(w, list)
	return nil
}

// printRecoverHints tells the user what to do with each interrupted batch.
func printRecoverHints(w io.Writer, list []journal.Summary) {
	for _, s := range list {
		if s.State == journal.StateInterrupted {
			fmt.Fprintf(w, "batch %s was interrupted by a crash and nothing of it was re-run: choose with toolhost journal recover %[1]s --keep-partial (keep its partial results) or --discard (mark them failed)\n", vis(s.ID))
		}
	}
}

func localTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newJournalShowCommand(g *globals) *cobra.Command {
	var format string
	var full bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a batch (or one call of it) with arguments, decisions, results and files changed",
		Long: `Show a batch with its calls, or one call: ID is a batch id, a call's journal id (BATCH.N,
as toolhost call, toolhost batch and this command print it), or the id a call's client gave
it (a model's call_1) when only one call of the journal has it: an id several calls have is
refused, listing them newest first with their journal ids.
Exit status: 0 on success, 2 for an unknown or ambiguous id, a wrong flag or an unreadable journal.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("journal show takes one batch or call id, got %d arguments; toolhost journal list shows the batches", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			ctx := cmd.Context()
			j, err := openJournal(ctx, g)
			if err != nil {
				return err
			}
			defer j.Close()
			b, call, note, err := findBatchOrCall(ctx, j, "journal show", args[0])
			if err != nil {
				return err
			}
			if format == "json" {
				if note != "" {
					fmt.Fprintln(os.Stderr, note)
				}
				return printJSON(server.ViewJournalBatch(onlyCall(b, call)))
			}
			if note != "" {
				fmt.Println(note)
			}
			return printBatch(os.Stdout, b, call, full)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	cmd.Flags().BoolVar(&full, "full", false, "print arguments and results whole (text only; json is always whole)")
	return cmd
}

// findBatchOrCall is the batch id names, or the batch holding the call
// it names, that call's journal id, and a note saying which call it is.
// An id several calls have is refused, listing them; cmd names the
// command in messages.
func findBatchOrCall(ctx context.Context, j *journal.Journal, cmd, id string) (b *journal.Batch, call, note string, err error) {
	t, err := j.Find(ctx, id)
	var amb *journal.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return nil, "", "", &exitError{code: exitUsage, err: ambiguousID(cmd, id, amb.Total, journalCandidates(amb), "")}
	case errors.Is(err, journal.ErrNotFound):
		return nil, "", "", usageErrorf("%s %s: no batch and no call has this id in journal %s; toolhost journal list shows the batches it holds (they are pruned after [journal] retention_days)", cmd, vis(id), j.Path())
	case err != nil:
		return nil, "", "", usageErrorf("%v", err)
	}
	if b, err = j.Batch(ctx, t.BatchID); err != nil {
		return nil, "", "", usageErrorf("%v", err)
	}
	if t.CallID == "" {
		return b, "", "", nil
	}
	note = fmt.Sprintf("call %s of batch %s (toolhost journal show %[2]s shows all its calls)", vis(t.JournalID), vis(b.ID))
	return b, t.JournalID, note, nil
}

// onlyCall is b with only the call whose journal id is ref, all of them
// for "".
func onlyCall(b *journal.Batch, ref string) *journal.Batch {
	if ref == "" {
		return b
	}
	c := *b
	c.Calls = slices.DeleteFunc(slices.Clone(b.Calls), func(c journal.Call) bool { return c.JournalID != ref })
	return &c
}

// candidate is one call an ambiguous id names.
type candidate struct {
	JournalID, Tool, Path string
	Time                  time.Time
}

func journalCandidates(amb *journal.AmbiguousError) []candidate {
	out := make([]candidate, len(amb.Candidates))
	for i, c := range amb.Candidates {
		out[i] = candidate{JournalID: c.JournalID, Tool: c.Tool, Path: c.Path, Time: c.Time}
	}
	return out
}

// ambiguousID refuses, for toolhost cmd, an id total calls have (a
// client's call id, unique only within its batch): it lists the newest of
// them, newest first, and says how to name one. done says what came of
// the command, if anything needs saying.
func ambiguousID(cmd, id string, total int, cands []candidate, done string) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s: %d calls have this id (an id a client gave its call, unique only within its batch), so toolhost does not guess which one you mean", cmd, vis(id), total)
	if done != "" {
		sb.WriteString("; " + done)
	}
	sb.WriteString(". Name one by its journal id:\n")
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  JOURNAL ID\tTOOL\tPATH\tTIME")
	for _, c := range cands {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", vis(c.JournalID), vis(orDash(c.Tool)), vis(orDash(showPath(c.Path))), localTime(c.Time))
	}
	tw.Flush()
	if more := total - len(cands); more > 0 {
		fmt.Fprintf(&sb, "  and %d older calls (toolhost journal list --limit shows more batches)\n", more)
	}
	if len(cands) > 0 {
		fmt.Fprintf(&sb, "for example: toolhost %s %s", cmd, vis(cands[0].JournalID))
	}
	return errors.New(strings.TrimSuffix(sb.String(), "\n"))
}

// showPath is p relative to the working directory when it lies within
// it, as a person there would name it; other paths as they are.
func showPath(p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return p
}

// printBatch prints a batch for a person: its header, then each call, or
// only the calls of id when it is not "".
func printBatch(w io.Writer, b *journal.Batch, id string, full bool) error {
	var failed int
	for _, c := range b.Calls {
		if c.Result != nil && !c.Result.OK {
			failed++
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "batch %s  %s\n", vis(b.ID), b.State)
	fmt.Fprintf(&sb, "  conversation  %s\n", vis(orDash(b.Conversation)))
	if b.Turn != "" {
		fmt.Fprintf(&sb, "  turn          %s\n", vis(b.Turn))
	}
	fmt.Fprintf(&sb, "  created       %s\n", localTime(b.Created))
	fmt.Fprintf(&sb, "  calls         %d (%d failed)\n", len(b.Calls), failed)
	if b.State == journal.StateInterrupted {
		fmt.Fprintf(&sb, "  interrupted by a crash; nothing of it was re-run: toolhost journal recover %s --keep-partial (keep its partial results) or --discard (mark them failed)\n", vis(b.ID))
	}
	for _, c := range onlyCall(b, id).Calls {
		sb.WriteString("\n")
		writeCall(&sb, c, full, b.State == journal.StateOpen)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// writeCall writes one call of a batch; open says the batch has not
// ended, so a call asked about and not yet decided still awaits its
// decision.
func writeCall(sb *strings.Builder, c journal.Call, full, open bool) {
	fmt.Fprintf(sb, "call %s  %s\n", vis(c.JournalID), vis(c.Tool))
	if c.ID != c.JournalID {
		fmt.Fprintf(sb, "  client's id   %s\n", vis(c.ID))
	}
	fmt.Fprintf(sb, "  disposition   %s\n", vis(c.Disposition))
	switch {
	case c.Decision != "" && c.DecidedBy != "":
		fmt.Fprintf(sb, "  decision      %s by %s\n", vis(string(c.Decision)), vis(c.DecidedBy))
	case c.Decision != "":
		fmt.Fprintf(sb, "  decision      %s\n", vis(string(c.Decision)))
	case open && c.Disposition == string(engine.RequiresConfirmation) && c.Result == nil:
		// The journal keeps arguments redacted: they are not what a
		// person decides on.
		fmt.Fprintf(sb, "  decision      none yet: it awaits one; the arguments below are redacted, as the journal keeps them: decide on what the asking surface shows (its question, or the call's \"approval\" in GET /v1/batches/%s on the server holding it), never on these\n", vis(c.JournalID[:max(0, strings.LastIndexByte(c.JournalID, '.'))]))
	default:
		fmt.Fprintf(sb, "  decision      none (nobody was asked)\n")
	}
	started := "never (it did not run)"
	if !c.Started.IsZero() {
		started = localTime(c.Started)
	}
	fmt.Fprintf(sb, "  started       %s\n", started)
	if c.Result != nil {
		fmt.Fprintf(sb, "  finished      %s\n", localTime(c.Result.Finished))
	} else {
		fmt.Fprintf(sb, "  finished      not yet\n")
	}
	fmt.Fprintf(sb, "  arguments     %s\n", showArguments(c.Arguments, full))
	writeResult(sb, c.Result, full)
	if len(c.Processes) > 0 {
		pgids := make([]string, len(c.Processes))
		for i, p := range c.Processes {
			pgids[i] = fmt.Sprint(p.PGID)
		}
		fmt.Fprintf(sb, "  processes     process group %s\n", strings.Join(pgids, ", "))
	}
	if len(c.Changes) > 0 {
		fmt.Fprintf(sb, "  files changed\n")
		for _, ch := range c.Changes {
			after := "not recorded (the call ended before the write completed)"
			if ch.After != nil {
				after = describeImage(*ch.After)
			}
			undo := "undoable"
			if !ch.Undoable {
				undo = "not undoable: " + ch.Reason
			}
			fmt.Fprintf(sb, "    %s: %s -> %s; %s\n", vis(ch.Path), describeImage(ch.Before), after, vis(undo))
		}
	}
}

// showArguments is the call's arguments on one line, cut unless full.
func showArguments(args json.RawMessage, full bool) string {
	var buf bytes.Buffer
	s := string(args)
	if json.Compact(&buf, args) == nil {
		s = buf.String()
	}
	if full || len(s) <= showArgBytes {
		return vis(s)
	}
	cut := cutUTF8(s, showArgBytes)
	return fmt.Sprintf("%s… (%d more bytes; --full shows them)", vis(cut), len(s)-len(cut))
}

func writeResult(sb *strings.Builder, r *journal.Result, full bool) {
	switch {
	case r == nil:
		fmt.Fprintf(sb, "  result        none yet\n")
		return
	case r.OK:
		fmt.Fprintf(sb, "  result        ok\n")
	default:
		fmt.Fprintf(sb, "  result        error %s: %s\n", vis(r.ErrorKind), vis(r.ErrorMessage))
	}
	if r.Content == "" {
		return
	}
	shown, more := r.Content, ""
	if !full {
		shown, more = cutContent(r.Content)
	}
	for line := range strings.Lines(shown) {
		fmt.Fprintf(sb, "    | %s\n", vis(strings.TrimSuffix(line, "\n")))
	}
	if more != "" {
		fmt.Fprintf(sb, "    %s\n", more)
	}
	if r.Truncated {
		fmt.Fprintf(sb, "    (the journal kept only the first %d bytes of this result when it recorded it; the rest is not in the journal)\n", len(r.Content))
	}
}

// cutContent is content cut to showResultLines lines and showResultBytes
// bytes, and a line saying what was cut, "" if nothing.
func cutContent(content string) (shown, more string) {
	shown = content
	lines := 0
	for i := range len(shown) {
		if shown[i] == '\n' {
			lines++
			if lines == showResultLines {
				shown = shown[:i+1]
				break
			}
		}
	}
	if len(shown) > showResultBytes {
		shown = cutUTF8(shown, showResultBytes)
	}
	if len(shown) == len(content) {
		return content, ""
	}
	rest := content[len(shown):]
	return shown, fmt.Sprintf("… %d more bytes (%d more lines) not shown; --full shows them", len(rest), strings.Count(rest, "\n")+boolInt(!strings.HasSuffix(rest, "\n")))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cutUTF8 is s cut to at most n bytes, never inside a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func describeImage(img journal.Image) string {
	switch {
	case !img.Exists:
		return "did not exist"
	case img.Mode.IsDir():
		return fmt.Sprintf("directory, mode %04o", img.Mode.Perm())
	case img.Mode&fs.ModeSymlink != 0:
		return fmt.Sprintf("symbolic link (%d bytes of target)", img.Size)
	}
	sum := img.SHA256
	if len(sum) > 12 {
		sum = sum[:12]
	}
	return fmt.Sprintf("%d bytes, mode %04o, sha256 %s", img.Size, img.Mode.Perm(), sum)
}

func newJournalExportCommand(g *globals) *cobra.Command {
	var since, output string
	cmd := &cobra.Command{
		Use:   "export --since T [--output FILE]",
		Short: "Write the calls since T as NDJSON, one tool.call and tool.result event a line, for log pipelines",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since == "" {
				return usageErrorf("journal export needs --since: an RFC 3339 time, a date (2025-06-01) or how long ago (24h, 7d); --since 1970-01-01 exports everything the journal holds")
			}
			t, err := server.ParseSince(since, time.Now())
			if err != nil {
				return usageErrorf("--since %v", err)
			}
			ctx := cmd.Context()
			j, err := openJournal(ctx, g)
			if err != nil {
				return err
			}
			defer j.Close()
			if output == "" || output == "-" {
				if err := j.Export(ctx, os.Stdout, t); err != nil {
					return usageErrorf("%v", err)
				}
				return nil
			}
			return exportFile(ctx, j, output, t)
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "export the calls of batches created since: an RFC 3339 time, a date (2025-06-01) or how long ago (24h, 7d)")
	cmd.Flags().StringVar(&output, "output", "", "write to FILE instead of standard output, replacing it whole or not at all")
	return cmd
}

// exportFile writes the export to a temporary file beside path and
// renames it over path once complete, so that path never holds half an
// export. The file keeps an existing file's mode, else 0600: the history
// holds what tools were asked and answered.
func exportFile(ctx context.Context, j *journal.Journal, path string, since time.Time) error {
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return usageErrorf("--output %s is not a regular file; name a file to write", path)
		}
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return usageErrorf("--output %s: %v; name a file in a directory you can write", path, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := j.Export(ctx, tmp, since); err != nil {
		return usageErrorf("%v (nothing was written to %s)", err, path)
	}
	if err := tmp.Chmod(mode); err != nil {
		return usageErrorf("--output %s: %v (nothing was written)", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return usageErrorf("--output %s: %v (nothing was written)", path, err)
	}
	if err := tmp.Close(); err != nil {
		return usageErrorf("--output %s: %v (nothing was written)", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return usageErrorf("--output %s: %v (nothing was written)", path, err)
	}
	done = true
	return nil
}

func newJournalRecoverCommand(g *globals) *cobra.Command {
	var keep, resume, discard bool
	var format string
	cmd := &cobra.Command{
		Use:   "recover BATCH --keep-partial|--discard",
		Short: "Keep the partial results of a batch a crash interrupted, or discard them; nothing is run",
		Long: `A batch a crash interrupted keeps the results of the calls that ended; the call that was
running is marked "interrupted by crash; not re-run" and the calls after it "not run".
--keep-partial keeps those partial results as they are (the batch is marked resumed);
--discard marks every result of the batch failed. Neither runs anything: the calls that
did not run stay not run, the calls stay in the journal either way, and side effects of
the calls that ran remain.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("journal recover takes one batch id, got %d arguments: toolhost journal recover BATCH --keep-partial|--discard (toolhost journal list --state interrupted lists them)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if err := checkFormat(format); err != nil {
				return err
			}
			keep = keep || resume
			if keep == discard {
				what := "neither"
				if keep {
					what = "both"
				}
				return usageErrorf("journal recover %s: give exactly one of --keep-partial (keep its partial results) and --discard (mark its results failed); you gave %s", id, what)
			}
			ctx := cmd.Context()
			j, err := openJournal(ctx, g)
			if err != nil {
				return err
			}
			defer j.Close()
			b, err := recoverBatch(ctx, j, id, keep)
			if err != nil {
				return err
			}
			if format == "json" {
				return printJSON(server.ViewJournalBatch(b))
			}
			fmt.Println(recoverSummary(b, keep))
			if !keep {
				return nil
			}
			fmt.Println()
			return printBatch(os.Stdout, b, "", false)
		},
	}
	cmd.Flags().BoolVar(&keep, "keep-partial", false, "keep the batch's partial results as recorded; nothing is run")
	// --resume was this flag's first name, though nothing is resumed.
	cmd.Flags().BoolVar(&resume, "resume", false, "the former name of --keep-partial")
	cmd.Flags().MarkDeprecated("resume", "it resumes nothing: use --keep-partial, which keeps the partial results")
	cmd.Flags().BoolVar(&discard, "discard", false, "mark every result of the batch failed; nothing is run")
	cmd.Flags().StringVar(&format, "format", "text", "text or json (the batch after the choice)")
	return cmd
}

// recoverBatch records the choice for batch id and returns the batch as
// it is now, or an error naming the id and what to do.
func recoverBatch(ctx context.Context, j *journal.Journal, id string, keep bool) (*journal.Batch, error) {
	b, err := j.Batch(ctx, id)
	if errors.Is(err, journal.ErrNotFound) {
		if t, err := j.Find(ctx, id); err == nil && t.CallID != "" {
			return nil, usageErrorf("journal recover %s: that is a call, %s of batch %s; recover takes the batch id: toolhost journal recover %[3]s --keep-partial|--discard", vis(id), vis(t.JournalID), vis(t.BatchID))
		}
		return nil, usageErrorf("journal recover %s: journal %s holds no batch with this id; toolhost journal list --state interrupted lists the batches waiting for a choice", vis(id), j.Path())
	}
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if b.State != journal.StateInterrupted {
		why := "only a batch a crash interrupted waits for --keep-partial or --discard"
		if b.State == journal.StateResumed || b.State == journal.StateDiscarded {
			why = "the choice for it was already made"
		}
		return nil, usageErrorf("journal recover %s: batch %[1]s is %s, not interrupted: %s; nothing was changed", id, b.State, why)
	}
	if err := j.ResolveInterrupted(ctx, id, keep); err != nil {
		return nil, usageErrorf("journal recover %s: %v", id, err)
	}
	if b, err = j.Batch(ctx, id); err != nil {
		return nil, usageErrorf("%v", err)
	}
	return b, nil
}

// recoverSummary says what recover did to b.
func recoverSummary(b *journal.Batch, keep bool) string {
	if !keep {
		return fmt.Sprintf("batch %s discarded: the results of its %d calls are marked failed; the calls stay in the journal, nothing was re-run, and side effects of the calls that ran remain", vis(b.ID), len(b.Calls))
	}
	var ok, interrupted, notRun, failed int
	for _, c := range b.Calls {
		switch {
		case c.Result == nil:
		case c.Result.OK:
			ok++
		case c.Result.ErrorMessage == journal.InterruptedMessage:
			interrupted++
		case c.Result.ErrorMessage == journal.NotRunMessage:
			notRun++
		default:
			failed++
		}
	}
	return fmt.Sprintf("batch %s keeps its partial results: %d succeeded, %d failed, %d interrupted by the crash, %d never started; nothing was run", vis(b.ID), ok, failed, interrupted, notRun)
}

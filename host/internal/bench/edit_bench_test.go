package bench

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// editLine is line i of fiveThousandLines, without its line break.
func editLine(i int) string {
	return fmt.Sprintf("\tline %04d: some Go-like code, x := f(y) + %d", i, i)
}

// editFiles writes a 5,000-line file at each name and returns its content.
func editFiles(b *testing.B, e *env, names ...string) string {
	content := fiveThousandLines()
	for _, name := range names {
		p := filepath.Join(e.dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return content
}

// editResolve resolves names in the sandbox and records them as read
// with content, as read_file would.
func editResolve(b *testing.B, e *env, content string, names ...string) []sandbox.Path {
	ps := make([]sandbox.Path, len(names))
	for i, name := range names {
		p, err := e.sb.Resolve(name)
		if err != nil {
			b.Fatal(err)
		}
		e.reads.Record(p.Abs, sha256.Sum256([]byte(content)), time.Now())
		ps[i] = p
	}
	return ps
}

// editResult runs one call as a batch of its own, approved, and returns
// its result, whose size the benchmarks report: a model reads all of it.
func (e *env) editResult(tool, args string) (engine.Result, error) {
	b := engine.Batch{Conversation: "bench", Calls: []engine.Call{{ID: "b", Name: tool, Arguments: json.RawMessage(args)}}}
	approve := engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
		return engine.ApproveAll("bench"), nil
	})
	_, rs := e.eng.Process(context.Background(), b, approve, engine.RunOptions{})
	if !rs[0].OK {
		return rs[0], rs[0].Error
	}
	return rs[0], nil
}

// editReportSize reports the bytes of a result's text and of its
// structured object.
func editReportSize(b *testing.B, r engine.Result) {
	b.ReportMetric(float64(len(r.Content)), "text-B")
	b.ReportMetric(float64(len(r.Structured)), "structured-B")
}

// editOp is one replacement in file number file.
type editOp struct {
	file     int
	old, new string
}

// nativeEdits is what an edit tool does, in plain Go: read each file
// through os.Root and check its SHA against the read cache, check each
// old string occurs once and replace it, then write every file in one
// transaction of the same sandbox and record the new hashes.
func (e *env) nativeEdits(ps []sandbox.Path, names []string, ops []editOp) error {
	texts := make([]string, len(names))
	for i, name := range names {
		f, err := e.root.Open(name)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return err
		}
		if _, same := e.reads.Matches(ps[i].Abs, sha256.Sum256(data)); !same {
			return errors.New("stale")
		}
		texts[i] = string(data)
	}
	for _, op := range ops {
		if strings.Count(texts[op.file], op.old) != 1 {
			return errors.New("not exactly once")
		}
		texts[op.file] = strings.Replace(texts[op.file], op.old, op.new, 1)
	}
	t := e.sb.Begin()
	defer t.Close()
	out := make([][]byte, len(names))
	for i, p := range ps {
		out[i] = []byte(texts[i])
		if _, err := t.Stage(p, out[i], false); err != nil {
			return err
		}
	}
	if err := t.Commit(); err != nil {
		return err
	}
	for i, p := range ps {
		e.reads.Record(p.Abs, sha256.Sum256(out[i]), time.Now())
	}
	return nil
}

// editBench pairs a tool's calls, alternating between two argument sets
// (forward and back, so the edits never run out), with native Go making
// the same edits, and reports the size of the tool's result.
func editBench(b *testing.B, e *env, tool string, args [2]string, ps []sandbox.Path, names []string, ops [2][]editOp) {
	var hostN, nativeN int
	var last engine.Result
	host := func() (err error) {
		last, err = e.editResult(tool, args[hostN%2])
		hostN++
		return err
	}
	native := func() error {
		err := e.nativeEdits(ps, names, ops[nativeN%2])
		nativeN++
		return err
	}
	b.Run("engine", func(b *testing.B) {
		pair(b, host, native)
		editReportSize(b, last)
	})
}

// BenchmarkEditFile5000Lines: edit_file making one replacement in a
// 5,000-line file through the whole engine (schema, stale check, the
// plugin's matching, commit, diff), beside native Go doing the same.
func BenchmarkEditFile5000Lines(b *testing.B) {
	e := setup(b)
	content := editFiles(b, e, "edit/host.txt", "edit/native.txt")
	if err := e.execute("read_file", `{"path":"edit/host.txt","start_line":1,"end_line":10}`)(); err != nil {
		b.Fatal(err)
	}
	names := []string{"edit/native.txt"}
	ps := editResolve(b, e, content, names...)
	old, changed := editLine(2500), "changed"+editLine(2500)
	var args [2]string
	for i, pair := range [2][2]string{{old, changed}, {changed, old}} {
		a, _ := json.Marshal(map[string]string{"path": "edit/host.txt", "old_string": pair[0], "new_string": pair[1]})
		args[i] = string(a)
	}
	ops := [2][]editOp{{{0, old, changed}}, {{0, changed, old}}}
	editBench(b, e, "edit_file", args, ps, names, ops)
}

// BenchmarkMultiEdit10Edits3Files: multi_edit making 10 replacements over
// three 5,000-line files (4, 3 and 3) in one commit, beside native Go
// doing the same reads, replacements and one transaction of three files.
func BenchmarkMultiEdit10Edits3Files(b *testing.B) {
	e := setup(b)
	hostFiles := []string{"multi/h1.txt", "multi/h2.txt", "multi/h3.txt"}
	names := []string{"multi/n1.txt", "multi/n2.txt", "multi/n3.txt"}
	content := editFiles(b, e, append(hostFiles, names...)...)
	for _, f := range hostFiles {
		if err := e.execute("read_file", `{"path":"`+f+`","start_line":1,"end_line":1}`)(); err != nil {
			b.Fatal(err)
		}
	}
	ps := editResolve(b, e, content, names...)
	var ops [2][]editOp
	for k := range 10 {
		line := editLine(250 + 480*k)
		ops[0] = append(ops[0], editOp{k % 3, line, "changed" + line})
		ops[1] = append(ops[1], editOp{k % 3, "changed" + line, line})
	}
	var args [2]string
	for i, list := range ops {
		var edits []map[string]string
		for _, op := range list {
			edits = append(edits, map[string]string{"path": hostFiles[op.file], "old_string": op.old, "new_string": op.new})
		}
		a, _ := json.Marshal(map[string]any{"edits": edits})
		args[i] = string(a)
	}
	editBench(b, e, "multi_edit", args, ps, names, ops)
}

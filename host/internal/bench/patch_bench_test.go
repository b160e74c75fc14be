package bench

import (
	"bytes"
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

	"github.com/toolhost/toolhost/lp1"
)

// patchPair returns a 10-operation patch over a 5,000-line file and the
// patch that undoes it, so iterations can alternate forever.
func patchPair(path string, content string) (forward, back string) {
	file, err := lp1.ParseFile(content)
	if err != nil {
		panic(err)
	}
	var fwd, bwd []lp1.Op
	for i := 250; i < len(file.Lines); i += 500 {
		old, changed := file.Lines[i], "changed "+file.Lines[i]
		fwd = append(fwd, lp1.Op{Kind: lp1.Replace, Find: []string{file.Lines[i-1], old}, New: []string{file.Lines[i-1], changed}})
		bwd = append(bwd, lp1.Op{Kind: lp1.Replace, Find: []string{changed}, New: []string{old}})
	}
	patch := func(ops []lp1.Op) string {
		return (&lp1.Patch{Sections: []lp1.Section{{Path: path, Ops: ops}}}).String()
	}
	return patch(fwd), patch(bwd)
}

func fiveThousandLines() string {
	var b strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&b, "\tline %04d: some Go-like code, x := f(y) + %d\n", i, i)
	}
	return b.String()
}

// BenchmarkApplyPatch10Ops5000Lines: apply_patch through the whole engine
// (schema, plugin parsing and applying LP1, stale check, atomic commit)
// beside native Go doing the same: read through os.Root, check the SHA,
// parse, apply, write atomically through the same sandbox, record.
func BenchmarkApplyPatch10Ops5000Lines(b *testing.B) {
	e := setup(b)
	content := fiveThousandLines()
	for _, name := range []string{"patch/host.txt", "patch/native.txt"} {
		p := filepath.Join(e.dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.execute("read_file", `{"path":"patch/host.txt","start_line":1,"end_line":10}`)(); err != nil {
		b.Fatal(err)
	}
	hostArgs := [2]string{}
	for i, patch := range pairOf(patchPair("patch/host.txt", content)) {
		a, _ := json.Marshal(map[string]string{"patch": patch})
		hostArgs[i] = string(a)
	}
	var hostN int
	host := func() error {
		args := hostArgs[hostN%2]
		hostN++
		return e.execute("apply_patch", args)()
	}
	np, err := e.sb.Resolve("patch/native.txt")
	if err != nil {
		b.Fatal(err)
	}
	e.reads.Record(np.Abs, sha256.Sum256([]byte(content)), time.Now())
	nativePatches := pairOf(patchPair("patch/native.txt", content))
	var nativeN int
	native := func() error {
		text := nativePatches[nativeN%2]
		nativeN++
		f, err := e.root.Open("patch/native.txt")
		if err != nil {
			return err
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return err
		}
		if _, same := e.reads.Matches(np.Abs, sha256.Sum256(data)); !same {
			return errors.New("stale")
		}
		patch, err := lp1.Parse(text)
		if err != nil {
			return err
		}
		file, err := lp1.ParseFile(string(data))
		if err != nil {
			return err
		}
		target := &lp1.Target{Path: "patch/native.txt", File: file}
		if err := lp1.Apply(patch, func(string) (*lp1.Target, error) { return target, nil }); err != nil {
			return err
		}
		out := []byte(target.File.String())
		if bytes.Equal(out, data) {
			return errors.New("no change")
		}
		if _, err := e.sb.WriteFileAtomic(np, out, false); err != nil {
			return err
		}
		e.reads.Record(np.Abs, sha256.Sum256(out), time.Now())
		return nil
	}
	b.Run("engine", func(b *testing.B) { pair(b, host, native) })
}

func pairOf(a, b string) [2]string { return [2]string{a, b} }

// BenchmarkLP1Apply5000Lines is the in-memory part alone, natively: parse
// the patch and the file, apply 10 operations, serialize.
func BenchmarkLP1Apply5000Lines(b *testing.B) {
	content := fiveThousandLines()
	forward, _ := patchPair("f", content)
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		patch, err := lp1.Parse(forward)
		if err != nil {
			b.Fatal(err)
		}
		file, err := lp1.ParseFile(content)
		if err != nil {
			b.Fatal(err)
		}
		target := &lp1.Target{File: file}
		if err := lp1.Apply(patch, func(string) (*lp1.Target, error) { return target, nil }); err != nil {
			b.Fatal(err)
		}
		_ = target.File.String()
	}
}

package bench

import (
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
)

// editLine is line i of fiveThousandLines, without its line break.
func editLine(i int) string {
	return fmt.Sprintf("\tline %04d: some Go-like code, x := f(y) + %d", i, i)
}

// benchFiles writes a 5,000-line file at each name and returns its content.
func benchFiles(b *testing.B, e *env, names ...string) string {
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

// nativeEdit is what an edit does, in plain Go: read through os.Root,
// check the SHA against the read cache, check old occurs once, replace,
// write atomically through the same sandbox, record.
func (e *env) nativeEdit(name, old, new string) error {
	p, err := e.sb.Resolve(name)
	if err != nil {
		return err
	}
	f, err := e.root.Open(name)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return err
	}
	if _, same := e.reads.Matches(p.Abs, sha256.Sum256(data)); !same {
		return errors.New("stale")
	}
	text := string(data)
	if strings.Count(text, old) != 1 {
		return errors.New("not exactly once")
	}
	out := []byte(strings.Replace(text, old, new, 1))
	if _, err := e.sb.WriteFileAtomic(p, out, false); err != nil {
		return err
	}
	e.reads.Record(p.Abs, sha256.Sum256(out), time.Now())
	return nil
}

// BenchmarkEditFile5000Lines: edit_file making one replacement in a
// 5,000-line file through the whole engine (schema, stale check, the
// plugin's matching, commit), beside native Go doing the same.
func BenchmarkEditFile5000Lines(b *testing.B) {
	e := setup(b)
	content := benchFiles(b, e, "edit/host.txt", "edit/native.txt")
	if err := e.execute("read_file", `{"path":"edit/host.txt","start_line":1,"end_line":10}`)(); err != nil {
		b.Fatal(err)
	}
	np, err := e.sb.Resolve("edit/native.txt")
	if err != nil {
		b.Fatal(err)
	}
	e.reads.Record(np.Abs, sha256.Sum256([]byte(content)), time.Now())
	old, changed := editLine(2500), "changed"+editLine(2500)
	var args [2]string
	for i, pair := range [2][2]string{{old, changed}, {changed, old}} {
		a, _ := json.Marshal(map[string]string{"path": "edit/host.txt", "old_string": pair[0], "new_string": pair[1]})
		args[i] = string(a)
	}
	var hostN, nativeN int
	host := func() error {
		hostN++
		return e.execute("edit_file", args[(hostN-1)%2])()
	}
	native := func() error {
		nativeN++
		if nativeN%2 == 1 {
			return e.nativeEdit("edit/native.txt", old, changed)
		}
		return e.nativeEdit("edit/native.txt", changed, old)
	}
	b.Run("engine", func(b *testing.B) { pair(b, host, native) })
}

// BenchmarkMultiEdit10Edits3Files: multi_edit making 10 replacements over
// three 5,000-line files in one commit, beside native Go doing the same
// file by file.
func BenchmarkMultiEdit10Edits3Files(b *testing.B) {
	e := setup(b)
	hostFiles := []string{"multi/h1.txt", "multi/h2.txt", "multi/h3.txt"}
	nativeFiles := []string{"multi/n1.txt", "multi/n2.txt", "multi/n3.txt"}
	content := benchFiles(b, e, append(hostFiles, nativeFiles...)...)
	for _, f := range hostFiles {
		if err := e.execute("read_file", `{"path":"`+f+`","start_line":1,"end_line":1}`)(); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range nativeFiles {
		p, err := e.sb.Resolve(f)
		if err != nil {
			b.Fatal(err)
		}
		e.reads.Record(p.Abs, sha256.Sum256([]byte(content)), time.Now())
	}
	type edit struct {
		file     int
		old, new string
	}
	var fwd, back []edit
	for k := range 10 {
		line := editLine(250 + 480*k)
		fwd = append(fwd, edit{k % 3, line, "changed" + line})
		back = append(back, edit{k % 3, "changed" + line, line})
	}
	var args [2]string
	for i, edits := range [2][]edit{fwd, back} {
		var list []map[string]string
		for _, ed := range edits {
			list = append(list, map[string]string{"path": hostFiles[ed.file], "old_string": ed.old, "new_string": ed.new})
		}
		a, _ := json.Marshal(map[string]any{"edits": list})
		args[i] = string(a)
	}
	var hostN, nativeN int
	host := func() error {
		hostN++
		return e.execute("multi_edit", args[(hostN-1)%2])()
	}
	native := func() error {
		nativeN++
		edits := fwd
		if nativeN%2 == 0 {
			edits = back
		}
		for _, ed := range edits {
			if err := e.nativeEdit(nativeFiles[ed.file], ed.old, ed.new); err != nil {
				return err
			}
		}
		return nil
	}
	b.Run("engine", func(b *testing.B) { pair(b, host, native) })
}

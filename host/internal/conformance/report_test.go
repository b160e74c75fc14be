package conformance

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/engine"
)

// hostile is what a plugin controls in a report (its tool name, its
// manifest's text in details, its results in findings), carrying an
// escape sequence that would retitle a terminal, a bidi override, and
// XML markup.
const hostile = "name\x1b]0;pwned\x07\u202e</failure><x a=\"&\">\x00"

func sampleReports() []Report {
	return []Report{
		{Plugin: "/p/read_file.wasm", Kind: KindNative, Tools: []string{"read_file"}, Results: []Result{
			{Plugin: "/p/read_file.wasm", Check: "abi.exports", Status: StatusPass, Detail: "ok", Elapsed: 1500 * time.Microsecond},
			{Plugin: "/p/read_file.wasm", Tool: "read_file", Check: "manifest.effects", Status: StatusFail, Detail: "understates " + hostile,
				Findings: []string{"holds fs.write", "second " + hostile}, Elapsed: 2 * time.Second},
			{Plugin: "/p/read_file.wasm", Check: "manifest.section", Status: StatusSkip, Detail: "not packed"},
		}},
		{Plugin: "/p/" + hostile + ".wasm", Tools: []string{hostile}, Results: []Result{
			{Plugin: "/p/" + hostile + ".wasm", Tool: hostile, Check: "case:x", Status: StatusPass},
		}},
	}
}

// The JSON report carries every result and the counts, and reads back
// (--format json for CI).
func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, sampleReports()); err != nil {
		t.Fatal(err)
	}
	var doc jsonReport
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if doc.Passed != 2 || doc.Failed != 1 || doc.Skipped != 1 || len(doc.Plugins) != 2 {
		t.Fatalf("counts %+v, %d plugins", doc.Counts, len(doc.Plugins))
	}
	p := doc.Plugins[0]
	if doc.Plugins[1].Path != "/p/"+engine.Visible(hostile)+".wasm" {
		t.Errorf("a hostile module name: %q", doc.Plugins[1].Path)
	}
	if p.Path != "/p/read_file.wasm" || p.Kind != KindNative || p.Tools[0] != "read_file" || p.Failed != 1 || len(p.Results) != 3 {
		t.Fatalf("plugin %+v", p)
	}
	r := p.Results[1]
	if r.Check != "manifest.effects" || r.Tool != "read_file" || r.Status != StatusFail || r.Millis != 2000 || len(r.Findings) != 2 || r.Findings[0] != "holds fs.write" {
		t.Fatalf("result %+v", r)
	}
	if strings.ContainsAny(buf.String(), "\x1b\u202e") || strings.Contains(r.Detail, "\x1b") || strings.Contains(r.Findings[1], "\x07") {
		t.Errorf("a terminal control reached the JSON report: %q", r.Detail)
	}
}

// The JUnit report is valid XML that reads back with encoding/xml,
// whatever the plugin's strings hold (--format junit).
func TestWriteJUnit(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, sampleReports()); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if doc.Tests != 4 || doc.Failures != 1 || doc.Skipped != 1 || len(doc.Suites) != 2 {
		t.Fatalf("totals %d/%d/%d, %d suites", doc.Tests, doc.Failures, doc.Skipped, len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Name != "read_file" || s.Tests != 3 || len(s.Cases) != 3 {
		t.Fatalf("suite %+v", s)
	}
	if c := s.Cases[0]; c.Name != "abi.exports" || c.Classname != "read_file" || c.Time != "0.002" || c.Failure != nil || c.Skipped != nil {
		t.Errorf("passing case %+v", c)
	}
	f := s.Cases[1]
	if f.Name != "manifest.effects (read_file)" || f.Failure == nil || !strings.HasPrefix(f.Failure.Message, "understates name") ||
		!strings.HasPrefix(f.Failure.Text, "holds fs.write\nsecond name") || f.Time != "2.000" {
		t.Errorf("failing case %+v %+v", f, f.Failure)
	}
	if s.Cases[2].Skipped == nil || s.Cases[2].Skipped.Message != "not packed" {
		t.Errorf("skipped case %+v", s.Cases[2])
	}
	if bytes.ContainsAny(buf.Bytes(), "\x1b\x07\x00\u202e") {
		t.Error("a control character reached the XML")
	}
}

// The text report streams one line per check, indents a failure's
// findings, and shows a plugin's strings with their controls written out,
// so a manifest cannot drive the terminal.
func TestText(t *testing.T) {
	var buf bytes.Buffer
	tx := Text{W: &buf}
	reports := sampleReports()
	for _, rep := range reports {
		for _, r := range rep.Results {
			tx.Result(r)
		}
		tx.Plugin(rep)
	}
	tx.Total(reports)
	out := buf.String()
	for _, want := range []string{
		"PASS  read_file         abi.exports           ok\n",
		"FAIL  read_file         manifest.effects      understates name",
		"\n        - holds fs.write\n        - second name",
		"SKIP  read_file         manifest.section      not packed\n",
		"read_file: 1 passed, 1 failed, 1 skipped\n",
		"total: 2 plugin(s), 2 passed, 1 failed, 1 skipped: FAILED\n",
		"<U+001B>", "<U+202E>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07\x00\u202e") {
		t.Errorf("a control character reached the terminal: %q", out)
	}
}

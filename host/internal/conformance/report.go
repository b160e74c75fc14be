package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/toolhost/toolhost/host/internal/engine"
)

// Counts are how many checks passed, failed and were skipped.
type Counts struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

func (c *Counts) add(s Status) {
	switch s {
	case StatusPass:
		c.Passed++
	case StatusFail:
		c.Failed++
	case StatusSkip:
		c.Skipped++
	}
}

// Count counts the results of reports.
func Count(reports ...Report) Counts {
	var c Counts
	for _, r := range reports {
		for _, res := range r.Results {
			c.add(res.Status)
		}
	}
	return c
}

func (c Counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.Passed, c.Failed, c.Skipped)
}

// Text writes the text format as a run goes: a line per check as it
// finishes, its findings indented below a failure, a summary line per
// plugin, and the total. Everything a plugin controls (its tool names,
// what its results and manifest say) is shown as engine.Visible renders
// it, so a manifest cannot put escape sequences on the terminal (SRD
// NFR-SEC-05, FR-OUT-02).
type Text struct {
	W io.Writer
}

// Result writes one check's line.
func (t Text) Result(r Result) {
	who := r.Tool
	if who == "" {
		who = Plugin{Module: r.Plugin}.Name()
	}
	fmt.Fprintf(t.W, "%s  %-16s  %-20s  %s\n", strings.ToUpper(string(r.Status)), engine.Visible(who), engine.Visible(r.Check), engine.Visible(r.Detail))
	if r.Status != StatusFail {
		return
	}
	for _, f := range r.Findings {
		fmt.Fprintf(t.W, "        - %s\n", engine.Visible(f))
	}
}

// Plugin writes a plugin's summary line.
func (t Text) Plugin(rep Report) {
	name := Plugin{Module: rep.Plugin}.Name()
	fmt.Fprintf(t.W, "%s: %s\n\n", engine.Visible(name), Count(rep))
}

// Total writes the run's summary line.
func (t Text) Total(reports []Report) {
	c := Count(reports...)
	verdict := "ok"
	if c.Failed > 0 {
		verdict = "FAILED"
	}
	fmt.Fprintf(t.W, "total: %d plugin(s), %s: %s\n", len(reports), c, verdict)
}

// jsonReport is the JSON format's document.
type jsonReport struct {
	Plugins []jsonPlugin `json:"plugins"`
	Counts
}

type jsonPlugin struct {
	Path    string       `json:"path"`
	Kind    Kind         `json:"kind,omitempty"`
	Tools   []string     `json:"tools"`
	Results []jsonResult `json:"results"`
	Counts
}

type jsonResult struct {
	Check    string   `json:"check"`
	Tool     string   `json:"tool,omitempty"`
	Status   Status   `json:"status"`
	Detail   string   `json:"detail,omitempty"`
	Findings []string `json:"findings,omitempty"`
	Millis   int64    `json:"ms"`
}

// WriteJSON writes reports as one JSON document: each plugin's results
// and counts, then the totals. Strings a plugin controls keep their lines
// and have every other control, format or invisible character written
// out (visibleLines), so that a CI log printing them shows them as they
// are.
func WriteJSON(w io.Writer, reports []Report) error {
	doc := jsonReport{Plugins: []jsonPlugin{}, Counts: Count(reports...)}
	for _, rep := range reports {
		p := jsonPlugin{Path: visibleLines(rep.Plugin), Kind: rep.Kind, Tools: sanitizeAll(rep.Tools), Results: []jsonResult{}, Counts: Count(rep)}
		if p.Tools == nil {
			p.Tools = []string{}
		}
		for _, r := range rep.Results {
			p.Results = append(p.Results, jsonResult{
				Check: visibleLines(r.Check), Tool: visibleLines(r.Tool), Status: r.Status,
				Detail: visibleLines(r.Detail), Findings: sanitizeAll(r.Findings), Millis: r.Elapsed.Milliseconds(),
			})
		}
		doc.Plugins = append(doc.Plugins, p)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// visibleLines is s with each line rendered by engine.Visible: the line
// breaks stay, every other control or invisible character is written out.
func visibleLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = engine.Visible(l)
	}
	return strings.Join(lines, "\n")
}

func sanitizeAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = visibleLines(s)
	}
	return out
}

// JUnit XML, as CI systems read it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure"`
	Skipped   *junitSkipped `xml:"skipped"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// WriteJUnit writes reports as JUnit XML: a test suite per plugin (named
// as the text format names it: the module's name without .wasm), a test
// case per check (named CHECK, or CHECK (TOOL) for a check of one tool),
// a failure's findings as its text. visibleLines first writes out the
// controls a CI log would pass on to a terminal (escape sequences, bidi
// overrides); encoding/xml escapes markup.
func WriteJUnit(w io.Writer, reports []Report) error {
	doc := junitSuites{}
	for _, rep := range reports {
		c := Count(rep)
		name := visibleLines(Plugin{Module: rep.Plugin}.Name())
		suite := junitSuite{Name: name, Tests: len(rep.Results), Failures: c.Failed, Skipped: c.Skipped}
		for _, r := range rep.Results {
			tc := junitCase{Classname: name, Name: visibleLines(r.Check), Time: fmt.Sprintf("%.3f", r.Elapsed.Seconds())}
			if r.Tool != "" {
				tc.Name += " (" + visibleLines(r.Tool) + ")"
			}
			switch r.Status {
			case StatusFail:
				tc.Failure = &junitFailure{Message: visibleLines(r.Detail), Text: strings.Join(sanitizeAll(r.Findings), "\n")}
			case StatusSkip:
				tc.Skipped = &junitSkipped{Message: visibleLines(r.Detail)}
			}
			suite.Cases = append(suite.Cases, tc)
		}
		doc.Suites = append(doc.Suites, suite)
		doc.Tests += suite.Tests
		doc.Failures += suite.Failures
		doc.Skipped += suite.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testenv"
)

// The search benchmark (make bench): the search and glob tools on a copy
// of the Go distribution's src/, warm page cache, through the whole engine
// (in-process through host.Open and Process, and over MCP stdio), beside
// ripgrep and grep -rn on the same tree in the same run, and the MCP peers
// where they do the same job. Each figure is the median of searchRuns
// runs; the contestants take turns within a run so a loaded machine slows
// all of them alike.
const (
	searchRuns = 5
	// searchScanBytes is toolhost's default max_scan_bytes: ripgrep and
	// the peers are given the same per-file limit where they have one.
	searchScanBytes = 2 << 20
)

// searchCase is one workload as each contestant spells it; a nil argv or
// args means that contestant does not do this job.
type searchCase struct {
	name    string
	tool    string         // toolhost's: search or glob
	args    map[string]any // toolhost's arguments
	rg      []string       // after rgCommon
	rgCount []string       // rg -c: counts only
	grep    []string       // after grepCommon
	node    map[string]any // the reference server's search_files
	peer    map[string]any // the Go peer's search_within_files
}

var (
	// rgCommon are toolhost's settings in ripgrep's flags: the ignore
	// files of every directory whether or not it is a git repository, no
	// user-wide ignore file or configuration, files over max_scan_bytes
	// skipped, line and column printed.
	rgCommon = []string{"--no-require-git", "--no-ignore-global", "--no-config", "--max-filesize", strconv.Itoa(searchScanBytes), "-n", "--column"}
	// grepCommon comes as close as grep can: hidden names and binary
	// files skipped (".?*" so the operand "." itself is not a hidden
	// name); grep has no ignore files and no size limit.
	grepCommon = []string{"-rnI", "--exclude-dir=.?*", "--exclude=.?*"}
)

func searchCases() []searchCase {
	return []searchCase{
		{
			name: "literal", tool: "search",
			args:    map[string]any{"query": "func main", "case_sensitive": true},
			rg:      []string{"-s", "-F", "func main"},
			rgCount: []string{"-c", "-s", "-F", "func main"},
			grep:    []string{"-F", "func main", "."},
			peer:    map[string]any{"path": ".", "substring": "func main"},
		},
		{
			name: "ci-literal", tool: "search",
			args:    map[string]any{"query": "error"},
			rg:      []string{"-i", "-F", "error"},
			rgCount: []string{"-c", "-i", "-F", "error"},
			grep:    []string{"-i", "-F", "error", "."},
		},
		{
			name: "regex", tool: "search",
			args:    map[string]any{"query": `func \w+Error\(`, "is_regex": true, "case_sensitive": true},
			rg:      []string{"-s", `func \w+Error\(`},
			rgCount: []string{"-c", "-s", `func \w+Error\(`},
			grep:    []string{"-E", `func \w+Error\(`, "."},
		},
		{
			name: "glob", tool: "glob",
			args: map[string]any{"patterns": []string{"**/*_test.go"}, "max_results": 10000},
			rg:   []string{"--files", "-g", "*_test.go"},
			node: map[string]any{"pattern": "**/*_test.go"},
		},
	}
}

// searchFigures are one contestant's runs of one workload.
type searchFigures struct {
	times []time.Duration
	bytes int    // output (CLI) or tools/call result (MCP) of the last run
	text  int    // the text content of the last result (MCP, in-process)
	found string // what it found, as it says: matches or files
	alloc int64  // bytes the in-process host allocated over the runs
}

func (f *searchFigures) median() time.Duration {
	if f == nil || len(f.times) == 0 {
		return 0
	}
	ts := slices.Clone(f.times)
	slices.Sort(ts)
	if n := len(ts); n%2 == 0 {
		return (ts[n/2-1] + ts[n/2]) / 2
	}
	return ts[len(ts)/2]
}

// contestant runs one workload once and says how many output bytes, how
// many bytes of text and what it found.
type contestant struct {
	name string
	run  func(c searchCase) (bytes, text int, found string, err error)
	does func(c searchCase) bool
}

// BenchmarkSearchCorpus is make bench's search line. It runs its rounds
// once whatever b.N is (make bench passes -benchtime 1x) and prints a
// table; it never judges a speed.
func BenchmarkSearchCorpus(b *testing.B) {
	root, files, size := searchCorpus(b)
	var notes []string
	env := servers(root, "")[0].env

	// toolhost over MCP stdio first: a build without the search tool
	// skips the benchmark rather than failing it.
	th, err := start("toolhost", []string{built.toolhost, "serve", "--stdio", "--root", root}, env, root)
	if err != nil {
		b.Fatal(err)
	}
	defer th.close()
	tools, err := th.handshake()
	if err != nil {
		b.Fatal(err)
	}
	if !slices.Contains(tools, "search") || !slices.Contains(tools, "glob") {
		b.Skipf("this build has no search or glob tool (tools/list: %v)", tools)
	}

	h := searchOpenHost(b, root)
	defer h.Close(context.Background())

	cs := []contestant{
		{name: "toolhost", run: func(c searchCase) (int, int, string, error) { return searchInProcess(h, c) }},
		{name: "toolhost-mcp", run: func(c searchCase) (int, int, string, error) { return searchMCP(th, c.tool, c.args) }},
	}
	if rg, err := exec.LookPath("rg"); err == nil {
		cs = append(cs,
			contestant{name: "rg", does: func(c searchCase) bool { return c.rg != nil }, run: func(c searchCase) (int, int, string, error) {
				return searchCLI(root, rg, append(slices.Clone(rgCommon), c.rg...))
			}},
			contestant{name: "rg-c", does: func(c searchCase) bool { return c.rgCount != nil }, run: func(c searchCase) (int, int, string, error) {
				return searchCLI(root, rg, append(slices.Clone(rgCommon), c.rgCount...))
			}})
	} else {
		notes = append(notes, "rg: not installed (make bench installs the ripgrep package when run as root); ripgrep left out")
	}
	if grep, err := exec.LookPath("grep"); err == nil {
		cs = append(cs, contestant{name: "grep", does: func(c searchCase) bool { return c.grep != nil }, run: func(c searchCase) (int, int, string, error) {
			return searchCLI(root, grep, append(slices.Clone(grepCommon), c.grep...))
		}})
	} else {
		notes = append(notes, "grep: not installed; left out")
	}
	node := servers(root, "")[1]
	if err := node.available(); err == nil {
		nc, err := start("node", node.argv, env, root)
		if err == nil {
			_, err = nc.handshake()
		}
		if err != nil {
			b.Fatal(err)
		}
		defer nc.close()
		cs = append(cs, contestant{name: "node", does: func(c searchCase) bool { return c.node != nil }, run: func(c searchCase) (int, int, string, error) {
			args := map[string]any{"path": root}
			for k, v := range c.node {
				args[k] = v
			}
			return searchMCP(nc, "search_files", args)
		}})
	} else {
		notes = append(notes, "node: "+err.Error())
	}
	if peer, err := searchBuildPeer(); err == nil {
		pc, err := start("peer", []string{peer, root}, env, root)
		if err == nil {
			_, err = pc.handshake()
		}
		if err != nil {
			b.Fatal(err)
		}
		defer pc.close()
		cs = append(cs, contestant{name: "peer", does: func(c searchCase) bool { return c.peer != nil }, run: func(c searchCase) (int, int, string, error) {
			args := map[string]any{}
			for k, v := range c.peer {
				args[k] = v
			}
			args["path"] = root
			return searchMCP(pc, "search_within_files", args)
		}})
	} else {
		notes = append(notes, "peer (mark3labs search_within_files): "+err.Error())
	}

	idle := searchSettledRSS(th)
	peaks := map[string]int64{}
	got := map[string]map[string]*searchFigures{}
	for _, c := range searchCases() {
		got[c.name] = map[string]*searchFigures{}
		searchResetPeak(th)
		for r := -1; r < searchRuns; r++ { // run -1 warms every path
			for i := range cs {
				x := cs[(r+1+i)%len(cs)]
				if x.does != nil && !x.does(c) {
					continue
				}
				var m0, m1 runtime.MemStats
				if x.name == "toolhost" {
					runtime.ReadMemStats(&m0)
				}
				t0 := time.Now()
				n, text, found, err := x.run(c)
				d := time.Since(t0)
				if x.name == "toolhost" {
					runtime.ReadMemStats(&m1)
				}
				if err != nil {
					b.Fatalf("%s %s: %v", x.name, c.name, err)
				}
				if r < 0 {
					continue
				}
				f := got[c.name][x.name]
				if f == nil {
					f = &searchFigures{}
					got[c.name][x.name] = f
				}
				f.times = append(f.times, d)
				f.bytes, f.text, f.found = n, text, found
				f.alloc += int64(m1.TotalAlloc - m0.TotalAlloc)
			}
		}
		peaks[c.name] = searchPeakRSS(th)
	}
	searchReport(b, got, cs, notes, files, size, idle, peaks)
}

// searchCorpus copies the Go distribution's src/ into a temporary
// directory and reads every file once, so the page cache is warm.
func searchCorpus(b *testing.B) (root string, files int, size int64) {
	b.Helper()
	src := filepath.Join(testenv.GOROOT(b), "src")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("no Go source tree to search at %s: %v", src, err)
	}
	dir := b.TempDir()
	if out, err := exec.Command("cp", "-r", src, dir).CombinedOutput(); err != nil {
		b.Fatalf("copying %s into %s: %v\n%s", src, dir, err, out)
	}
	root = filepath.Join(dir, "src")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		files++
		size += int64(len(data))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return root, files, size
}

// searchOpenHost opens a host on root with the built plugins and the
// default configuration, as an embedder does.
func searchOpenHost(b *testing.B, root string) *host.Host {
	cfg := host.DefaultConfig()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	h, err := host.Open(context.Background(), host.Options{
		PluginDir: filepath.Join(filepath.Dir(built.toolhost), "plugins"),
		Config:    cfg,
		CacheDir:  built.cache,
	})
	if err != nil {
		b.Fatalf("host.Open on %s: %v", root, err)
	}
	return h
}

// searchInProcess runs one call as a batch of its own through the engine.
func searchInProcess(h *host.Host, c searchCase) (int, int, string, error) {
	args, err := json.Marshal(c.args)
	if err != nil {
		return 0, 0, "", err
	}
	batch := host.Batch{Conversation: "bench", Calls: []host.Call{{ID: "s", Name: c.tool, Arguments: args}}}
	_, rs := h.Process(context.Background(), batch, host.BatchOptions{Approver: host.ApproverFunc(
		func(context.Context, []host.Confirmation) (host.Decision, error) {
			return host.ApproveAll("bench"), nil
		})})
	r := rs[0]
	if !r.OK {
		return 0, 0, "", fmt.Errorf("%s failed: %v", c.tool, r.Error)
	}
	found, err := searchFound(r.Structured)
	return len(r.Content) + len(r.Structured), len(r.Content), found, err
}

// searchMCP runs one tools/call and measures the answer as a client
// receives it.
func searchMCP(c *client, tool string, args map[string]any) (int, int, string, error) {
	raw, err := c.request("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return 0, 0, "", err
	}
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return 0, 0, "", fmt.Errorf("%s: %s result: %w", c.name, tool, err)
	}
	if r.IsError {
		return 0, 0, "", fmt.Errorf("%s: %s failed: %.300s", c.name, tool, r.text())
	}
	text := r.text()
	found := ""
	if c.name == "toolhost" {
		if found, err = searchFound(r.StructuredContent); err != nil {
			return 0, 0, "", err
		}
	} else if text != "" && text != "No matches found" {
		found = strconv.Itoa(strings.Count(strings.TrimRight(text, "\n"), "\n")+1) + " lines"
	}
	return len(raw), len(text), found, nil
}

// searchFound says what a toolhost result found, from its structured
// content: the matching lines in all, or the files.
func searchFound(structured json.RawMessage) (string, error) {
	var s struct {
		TotalMatches *int `json:"total_matches"`
		Total        *int `json:"total"`
		LowerBound   bool `json:"total_is_lower_bound"`
		Truncated    bool `json:"truncated"`
	}
	if err := json.Unmarshal(structured, &s); err != nil {
		return "", fmt.Errorf("structured result %.200s: %w", structured, err)
	}
	n := s.Total
	if s.TotalMatches != nil {
		n = s.TotalMatches
	}
	if n == nil {
		return "", fmt.Errorf("structured result has neither total_matches nor total: %.200s", structured)
	}
	out := strconv.Itoa(*n)
	if s.LowerBound {
		out = "≥" + out
	}
	return out, nil
}

// searchCLI runs a command in root with its output to a pipe the
// benchmark drains, and says how many bytes and lines it wrote (for -c
// output, the sum of the counts). Exit status 1 is "nothing found".
func searchCLI(root, prog string, args []string) (int, int, string, error) {
	cmd := exec.Command(prog, args...)
	cmd.Dir = root
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, "", err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, "", err
	}
	counter := &searchLineCounter{count: slices.Contains(args, "-c")}
	_, cerr := io.Copy(counter, out)
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && stderr.Len() == 0 {
		err = nil
	}
	if err = errors.Join(err, cerr); err != nil {
		return 0, 0, "", fmt.Errorf("%s %s: %w: %s", prog, strings.Join(args, " "), err, stderr.Bytes())
	}
	found := strconv.Itoa(counter.lines)
	if counter.count {
		found = strconv.Itoa(counter.sum)
	}
	return counter.bytes, 0, found, nil
}

// searchLineCounter counts the bytes and lines written to it, and with
// count the sum of the numbers after each line's last ':' (rg -c).
type searchLineCounter struct {
	count      bool
	bytes      int
	lines, sum int
	partial    []byte
}

func (w *searchLineCounter) Write(p []byte) (int, error) {
	w.bytes += len(p)
	w.lines += bytes.Count(p, []byte{'\n'})
	if w.count {
		w.partial = append(w.partial, p...)
		for {
			i := bytes.IndexByte(w.partial, '\n')
			if i < 0 {
				break
			}
			line := w.partial[:i]
			if n, err := strconv.Atoi(string(line[bytes.LastIndexByte(line, ':')+1:])); err == nil {
				w.sum += n
			}
			w.partial = w.partial[i+1:]
		}
	}
	return len(p), nil
}

// searchBuildPeer is the Go peer TestMain built, or why there is none.
func searchBuildPeer() (string, error) {
	if built.peerErr != nil {
		return "", fmt.Errorf("%w; left out", built.peerErr)
	}
	return built.peer, nil
}

// searchSettledRSS is c's resident set once it has stopped moving: the
// server warms its plugins in the background after the handshake, and
// the search's own cost is what comes on top.
func searchSettledRSS(c *client) int64 {
	last := int64(-1)
	for range 40 {
		time.Sleep(250 * time.Millisecond)
		now := searchStatus(c, "VmRSS:")
		if now == last {
			break
		}
		last = now
	}
	return last
}

// searchResetPeak starts c's peak resident set afresh (clear_refs 5),
// so the next searchPeakRSS is the peak of what c did since.
func searchResetPeak(c *client) {
	os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", c.cmd.Process.Pid), []byte("5"), 0)
}

// searchPeakRSS is the serve process's peak resident set (VmHWM), or 0
// where /proc does not say.
func searchPeakRSS(c *client) int64 { return searchStatus(c, "VmHWM:") }

// searchStatus is one "kB" field of c's /proc status in bytes, or 0.
func searchStatus(c *client, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// searchReport prints the table (printed, not logged: the testing
// package cuts a benchmark's log short) and the ratios as metrics.
func searchReport(b *testing.B, got map[string]map[string]*searchFigures, cs []contestant, notes []string, files int, size int64, idle int64, peaks map[string]int64) {
	var t strings.Builder
	fmt.Fprintf(&t, "search: Go %s src/, %d files, %.0f MB, warm page cache, %d cores; medians of %d runs\n",
		runtime.Version(), files, float64(size)/1e6, runtime.NumCPU(), searchRuns)
	ms := func(d time.Duration) string {
		if d == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(d.Microseconds())/1000)
	}
	fmt.Fprintf(&t, "%-11s", "workload")
	for _, x := range cs {
		fmt.Fprintf(&t, " %13s", x.name+" ms")
	}
	fmt.Fprintf(&t, " %8s %8s %9s\n", "÷rg", "mcp÷rg", "÷grep")
	for _, c := range searchCases() {
		g := got[c.name]
		fmt.Fprintf(&t, "%-11s", c.name)
		for _, x := range cs {
			fmt.Fprintf(&t, " %13s", ms(g[x.name].median()))
		}
		th, mcp := g["toolhost"].median(), g["toolhost-mcp"].median()
		ratio := func(a time.Duration, base string) string {
			d := g[base].median()
			if d == 0 {
				return "-"
			}
			r := float64(a) / float64(d)
			b.ReportMetric(r, c.name+"-x-"+base)
			return fmt.Sprintf("%.2f×", r)
		}
		fmt.Fprintf(&t, " %8s", ratio(th, "rg"))
		if d := g["rg"].median(); d > 0 {
			fmt.Fprintf(&t, " %8s", fmt.Sprintf("%.2f×", float64(mcp)/float64(d)))
		} else {
			fmt.Fprintf(&t, " %8s", "-")
		}
		fmt.Fprintf(&t, " %9s\n", ratio(th, "grep"))
		b.ReportMetric(float64(th.Microseconds())/1000, c.name+"-ms")
	}
	fmt.Fprintf(&t, "what each found (toolhost: matching lines or files in all; CLIs: output lines, rg -c: the sum) and result bytes:\n")
	for _, c := range searchCases() {
		fmt.Fprintf(&t, "%-11s", c.name)
		for _, x := range cs {
			if f := got[c.name][x.name]; f != nil {
				fmt.Fprintf(&t, "  %s %s found, %d B", x.name, f.found, f.bytes)
				if f.text > 0 {
					fmt.Fprintf(&t, " (%d B text)", f.text)
				}
			}
		}
		fmt.Fprintln(&t)
	}
	fmt.Fprintf(&t, "in-process host, Go heap allocated per call (the test's own few bytes included):")
	for _, c := range searchCases() {
		if f := got[c.name]["toolhost"]; f != nil {
			a := float64(f.alloc) / float64(len(f.times)) / 1e6
			fmt.Fprintf(&t, " %s %.1f MB", c.name, a)
			b.ReportMetric(a, c.name+"-alloc-MB/call")
		}
	}
	fmt.Fprintln(&t)
	if idle > 0 {
		fmt.Fprintf(&t, "toolhost serve --stdio resident: %.0f MB settled after the handshake (plugins warmed); peak during each workload's MCP runs:", float64(idle)/1e6)
		for _, c := range searchCases() {
			fmt.Fprintf(&t, " %s %.0f MB", c.name, float64(peaks[c.name])/1e6)
			b.ReportMetric(float64(peaks[c.name])/1e6, c.name+"-peak-rss-MB")
		}
		fmt.Fprintf(&t, " (corpus %.0f MB)\n", float64(size)/1e6)
	}
	for _, n := range notes {
		fmt.Fprintln(&t, "note:", n)
	}
	b.ReportMetric(0, "ns/op")
	fmt.Print(t.String())
}

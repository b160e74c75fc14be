package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testenv"
)

const (
	// rounds of the servers; the figures are medians.
	rounds = 5
	// warmCalls of each workload run before timing, as an agent's
	// long-lived server has served some already.
	warmCalls = 20
	// Each workload is timed in turns slices per server and round, a
	// slice long each (at least one call), the servers taking turns: on
	// a machine whose load moves from second to second, each server sees
	// the same load.
	turns = 10
	slice = 50 * time.Millisecond
)

// sample is one server's figures in one round.
type sample struct {
	startups []float64             // ms from spawn to the tools/list answer, every spawn's
	first    map[string]float64    // ms from the tools/list answer to a fresh server's first call, by workload
	rate     map[string]float64    // calls/s by workload
	sizes    map[string]answerSize // by workload
}

// BenchmarkMCPStdio is make bench's table: for toolhost, the reference
// Node server, the Go peer, a native Go server on the official SDK and
// the hand-written floor, the time per sequential tools/call over MCP
// stdio (one call in flight, like an agent), the bytes of each answer,
// the time from spawn to the tools/list answer and from there to a fresh
// server's first answer. Each round first spawns a fresh server per
// workload and server, timing its handshake and first call, then spawns
// the servers one after the other (the first one rotating) and times
// each workload in short slices, the servers taking turns; the figures
// are the medians over rounds, the ratios the medians of each round's
// ratio. It runs its rounds once whatever b.N is (make bench passes
// -benchtime 1x). With MCPBENCH_CPUPROFILE_DIR set, toolhost and the
// native server write CPU profiles of every run there.
func BenchmarkMCPStdio(b *testing.B) {
	root, content := fixture(b)
	var srvs []server
	var notes []string
	for _, s := range servers(root, content) {
		if s.available != nil {
			if err := s.available(); err != nil {
				if !s.optional || testenv.Required(s.need) {
					b.Fatal(err) // a benchmark without its baseline is no comparison
				}
				notes = append(notes, fmt.Sprintf("%s left out: %v (set TOOLHOST_REQUIRE_%s=1 to make this a failure)", s.name, err, s.need))
				continue
			}
		}
		srvs = append(srvs, s)
	}
	// A round before the timed ones warms every cache a server start
	// reads (compiled plugins, the Node modules, the page cache).
	if _, err := round(srvs, root, 0); err != nil {
		b.Fatal(err)
	}
	got := map[string][]sample{}
	for r := range rounds {
		smps, err := round(srvs, root, r)
		if err != nil {
			b.Fatal(err)
		}
		for i, s := range srvs {
			got[s.name] = append(got[s.name], smps[i])
		}
	}
	report(b, srvs, got, notes)
}

// round times every server's first calls on fresh servers, then spawns
// every server, times their workloads and stops them; its samples are in
// srvs' order.
func round(srvs []server, root string, r int) (smps []sample, err error) {
	smps = make([]sample, len(srvs))
	for k := range smps {
		smps[k] = sample{first: map[string]float64{}, rate: map[string]float64{}}
	}
	if err := firstCalls(srvs, root, r, smps); err != nil {
		return nil, err
	}
	run := make([]*running, len(srvs))
	defer func() {
		for _, x := range run {
			if x != nil {
				err = errors.Join(err, x.close())
			}
		}
	}()
	for i := range srvs {
		k := (r + i) % len(srvs)
		if run[k], err = launch(srvs[k], root); err != nil {
			return nil, err
		}
		smps[k].startups = append(smps[k].startups, millis(run[k].startup))
	}
	for w := range srvs[0].workloads() {
		calls := make([]int, len(srvs))
		spent := make([]time.Duration, len(srvs))
		for k, x := range run {
			for range warmCalls {
				if err := x.do(srvs[k].workloads()[w]); err != nil {
					return nil, err
				}
			}
		}
		for sl := range turns {
			for i := range srvs {
				k := (r + sl + i) % len(srvs)
				n, d, err := run[k].burst(srvs[k].workloads()[w], slice)
				if err != nil {
					return nil, err
				}
				calls[k] += n
				spent[k] += d
			}
		}
		for k, s := range srvs {
			smps[k].rate[s.workloads()[w].name] = float64(calls[k]) / spent[k].Seconds()
		}
	}
	for k, x := range run {
		smps[k].sizes = x.sizes
	}
	return smps, nil
}

// firstCalls spawns, for each workload, every server afresh (one at a
// time, the first rotating) and times its handshake and, from the
// tools/list answer, its first call of the workload: what an agent waits
// for when it starts a server to make one call.
func firstCalls(srvs []server, root string, r int, smps []sample) error {
	for w := range srvs[0].workloads() {
		for i := range srvs {
			k := (r + i) % len(srvs)
			x, err := launch(srvs[k], root)
			if err != nil {
				return err
			}
			wl := srvs[k].workloads()[w]
			err = x.do(wl)
			first := time.Since(x.listed)
			if err = errors.Join(err, x.close()); err != nil {
				return err
			}
			smps[k].startups = append(smps[k].startups, millis(x.startup))
			smps[k].first[wl.name] = millis(first)
		}
	}
	return nil
}

// burst runs w's calls one after the other for about d (at least one),
// every answer checked, and says how many it ran in how long.
func (r *running) burst(w workload, d time.Duration) (int, time.Duration, error) {
	n := 0
	t0 := time.Now()
	for {
		if err := r.do(w); err != nil {
			return 0, 0, err
		}
		n++
		if el := time.Since(t0); el >= d {
			return n, el, nil
		}
	}
}

// figures are one server's medians over the rounds.
type figures struct {
	readUs, listUs       float64 // µs per call
	startup              float64 // ms
	firstRead, firstList float64 // ms
	sizes                map[string]answerSize
}

func summarize(smps []sample) figures {
	var startups []float64
	for _, s := range smps {
		startups = append(startups, s.startups...)
	}
	return figures{
		readUs:    1e6 / median(smps, func(x sample) float64 { return x.rate["read"] }),
		listUs:    1e6 / median(smps, func(x sample) float64 { return x.rate["list"] }),
		startup:   mid(startups),
		firstRead: median(smps, func(x sample) float64 { return x.first["read"] }),
		firstList: median(smps, func(x sample) float64 { return x.first["list"] }),
		sizes:     smps[len(smps)-1].sizes,
	}
}

// report prints the medians as metrics (one benchmark line) and as a
// table, with toolhost's ratio to each other server.
func report(b *testing.B, srvs []server, got map[string][]sample, notes []string) {
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "MCP over stdio, medians of %d interleaved rounds; one call in flight; bytes are the whole JSON-RPC answer line\n\n", rounds)
	fmt.Fprintln(&tbl, "| server | 200-line read µs/call | 100-entry list µs/call | read bytes/call | list bytes/call | spawn → tools/list ms | first tools/call ms (read / list) |")
	fmt.Fprintln(&tbl, "|---|---:|---:|---:|---:|---:|---:|")
	figs := map[string]figures{}
	for _, s := range srvs {
		f := summarize(got[s.name])
		figs[s.name] = f
		fmt.Fprintf(&tbl, "| %s | %.0f | %.0f | %d | %d | %.1f | %.1f / %.1f |\n", s.name, f.readUs, f.listUs,
			f.sizes["read"].line, f.sizes["list"].line, f.startup, f.firstRead, f.firstList)
		b.ReportMetric(f.readUs, s.name+"-read-µs/call")
		b.ReportMetric(f.listUs, s.name+"-list-µs/call")
		b.ReportMetric(float64(f.sizes["read"].line), s.name+"-read-B/call")
		b.ReportMetric(float64(f.sizes["list"].line), s.name+"-list-B/call")
		b.ReportMetric(f.startup, s.name+"-startup-ms")
		b.ReportMetric(f.firstRead, s.name+"-first-read-ms")
		b.ReportMetric(f.firstList, s.name+"-first-list-ms")
	}
	fmt.Fprintln(&tbl, "\nanswer bytes: the line, and in it the text content (decoded) and the structuredContent (JSON)")
	fmt.Fprintln(&tbl, "| server | read line | read text | read structured | list line | list text | list structured |")
	fmt.Fprintln(&tbl, "|---|---:|---:|---:|---:|---:|---:|")
	for _, s := range srvs {
		r, l := figs[s.name].sizes["read"], figs[s.name].sizes["list"]
		fmt.Fprintf(&tbl, "| %s | %d | %d | %d | %d | %d | %d |\n", s.name, r.line, r.text, r.structured, l.line, l.text, l.structured)
	}
	fmt.Fprintln(&tbl, "\nratios, median of each round's: >1 when toolhost is faster (or sends fewer bytes)")
	th := figs["toolhost"]
	for _, s := range srvs[1:] {
		base := s.name
		read := medianRatio(got["toolhost"], got[base], func(x sample) float64 { return x.rate["read"] })
		list := medianRatio(got["toolhost"], got[base], func(x sample) float64 { return x.rate["list"] })
		spawn := medianRatio(got[base], got["toolhost"], func(x sample) float64 { return mid(slices.Clone(x.startups)) })
		firstRead := medianRatio(got[base], got["toolhost"], func(x sample) float64 { return x.first["read"] })
		firstList := medianRatio(got[base], got["toolhost"], func(x sample) float64 { return x.first["list"] })
		f := figs[base]
		b.ReportMetric(read, "read-x-"+base)
		b.ReportMetric(list, "list-x-"+base)
		fmt.Fprintf(&tbl, "toolhost/%s read: %.3g×  list: %.3g×  read bytes: %.3g×  list bytes: %.3g×  spawn: %.3g×  first read: %.3g×  first list: %.3g×\n",
			base, read, list, float64(f.sizes["read"].line)/float64(th.sizes["read"].line), float64(f.sizes["list"].line)/float64(th.sizes["list"].line),
			spawn, firstRead, firstList)
	}
	for _, n := range notes {
		fmt.Fprintln(&tbl, n)
	}
	b.ReportMetric(0, "ns/op") // the rounds' total time says nothing
	// Printed, not logged: the testing package cuts a benchmark's log
	// short.
	fmt.Print(tbl.String())
}

func millis(d time.Duration) float64 { return d.Seconds() * 1000 }

func median(smps []sample, f func(sample) float64) float64 {
	xs := make([]float64, len(smps))
	for i, s := range smps {
		xs[i] = f(s)
	}
	return mid(xs)
}

// medianRatio is the median of f(a) over f(b), round by round: the
// servers of one round shared the machine's load.
func medianRatio(a, b []sample, f func(sample) float64) float64 {
	xs := make([]float64, len(a))
	for i := range a {
		xs[i] = f(a[i]) / f(b[i])
	}
	return mid(xs)
}

// mid is the median of xs, which it sorts.
func mid(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

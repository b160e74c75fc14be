package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	// rounds of the three servers; the figures are medians.
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
	startup time.Duration
	rate    map[string]float64 // calls/s by workload name
}

// BenchmarkMCPStdio is make bench's line: sequential tools/call
// throughput over MCP stdio, one call in flight, for toolhost, the
// reference Node server and a native Go server, with the time from spawn
// to the tools/list answer. Each round spawns the servers one after the
// other (the first one rotating), then times each workload in short
// slices, the servers taking turns; the figures are the medians over
// rounds, the ratios the medians of each round's ratio. It runs its
// rounds once whatever b.N is (make bench passes -benchtime 1x). With
// MCPBENCH_CPUPROFILE_DIR set, toolhost and the native server write CPU
// profiles of every run there.
func BenchmarkMCPStdio(b *testing.B) {
	root, content := fixture(b)
	srvs := servers(root, content)
	for _, s := range srvs {
		if s.available != nil {
			if err := s.available(); err != nil {
				b.Fatal(err) // a benchmark without its baseline is no comparison
			}
		}
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
	report(b, srvs, got)
}

// round spawns every server, times their workloads and stops them; its
// samples are in srvs' order.
func round(srvs []server, root string, r int) (smps []sample, err error) {
	run := make([]*running, len(srvs))
	defer func() {
		for _, x := range run {
			if x != nil {
				err = errors.Join(err, x.close())
			}
		}
	}()
	smps = make([]sample, len(srvs))
	for i := range srvs {
		k := (r + i) % len(srvs)
		if run[k], err = launch(srvs[k], root); err != nil {
			return nil, err
		}
		smps[k] = sample{startup: run[k].startup, rate: map[string]float64{}}
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
	return smps, nil
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

// report prints the medians as metrics (one benchmark line) and as a
// table.
func report(b *testing.B, srvs []server, got map[string][]sample) {
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "medians of %d interleaved rounds, sequential tools/call over stdio\n", rounds)
	fmt.Fprintf(&tbl, "%-9s %12s %12s %18s\n", "server", "read/s", "list/s", "spawn→tools/list")
	for _, s := range srvs {
		smps := got[s.name]
		read := median(smps, func(x sample) float64 { return x.rate["read"] })
		list := median(smps, func(x sample) float64 { return x.rate["list"] })
		startup := median(smps, func(x sample) float64 { return x.startup.Seconds() * 1000 })
		b.ReportMetric(read, s.name+"-read-calls/s")
		b.ReportMetric(list, s.name+"-list-calls/s")
		b.ReportMetric(startup, s.name+"-startup-ms")
		fmt.Fprintf(&tbl, "%-9s %12.0f %12.0f %15.1f ms\n", s.name, read, list, startup)
	}
	for _, base := range []string{"node", "native"} {
		for _, w := range []string{"read", "list"} {
			ratio := medianRatio(got["toolhost"], got[base], w)
			b.ReportMetric(ratio, w+"-x-"+base)
			fmt.Fprintf(&tbl, "toolhost/%s %s: %.2f×\n", base, w, ratio)
		}
	}
	b.ReportMetric(0, "ns/op") // the rounds' total time says nothing
	// Printed, not logged: the testing package cuts a benchmark's log
	// short.
	fmt.Print(tbl.String())
}

func median(smps []sample, f func(sample) float64) float64 {
	xs := make([]float64, len(smps))
	for i, s := range smps {
		xs[i] = f(s)
	}
	return mid(xs)
}

// medianRatio is the median of a's rate over b's, round by round: the
// servers of one round shared the machine's load.
func medianRatio(a, b []sample, w string) float64 {
	xs := make([]float64, len(a))
	for i := range a {
		xs[i] = a[i].rate[w] / b[i].rate[w]
	}
	return mid(xs)
}

func mid(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

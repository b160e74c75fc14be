package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	// rounds of the three servers in turn; the figures are medians.
	rounds = 5
	// warmCalls of each workload run before timing, as an agent's
	// long-lived server has served some already.
	warmCalls = 20
	// window is how long each workload is timed per server and round, at
	// least minCalls calls.
	window   = 500 * time.Millisecond
	minCalls = 50
)

// sample is one server's figures in one round.
type sample struct {
	startup time.Duration
	rate    map[string]float64 // calls/s by workload name
}

// BenchmarkMCPStdio is issue 11's make bench line: sequential tools/call
// throughput over MCP stdio, one call in flight, for toolhost, the
// reference Node server and a native Go server, with the time from spawn
// to the tools/list answer. Each round spawns every server in turn (the
// first one rotating), so all three see the same machine; the figures are
// the medians over rounds, the ratios the medians of each round's ratio.
// It runs the rounds once whatever b.N is (make bench passes -benchtime 1x).
func BenchmarkMCPStdio(b *testing.B) {
	root, content := fixture(b)
	srvs := servers(root, content)
	for _, s := range srvs {
		if s.available != nil {
			if err := s.available(); err != nil {
				b.Fatal(err) // a benchmark without its baseline is no comparison
			}
		}
		// Warms every cache a server start reads (compiled plugins, the
		// Node modules, the page cache) before anything is timed.
		if _, err := measure(s, root); err != nil {
			b.Fatal(err)
		}
	}
	got := map[string][]sample{}
	for round := range rounds {
		for i := range srvs {
			s := srvs[(round+i)%len(srvs)]
			smp, err := measure(s, root)
			if err != nil {
				b.Fatal(err)
			}
			got[s.name] = append(got[s.name], smp)
		}
	}
	report(b, srvs, got)
}

// measure spawns s, times its workloads and stops it.
func measure(s server, root string) (sample, error) {
	r, err := launch(s, root)
	if err != nil {
		return sample{}, err
	}
	smp := sample{startup: r.startup, rate: map[string]float64{}}
	for _, w := range s.workloads() {
		rate, err := r.rate(w)
		if err != nil {
			r.close()
			return sample{}, err
		}
		smp.rate[w.name] = rate
	}
	return smp, r.close()
}

// rate is w's sequential calls per second, every answer checked.
func (r *running) rate(w workload) (float64, error) {
	for range warmCalls {
		if err := r.do(w); err != nil {
			return 0, err
		}
	}
	n := 0
	t0 := time.Now()
	for n < minCalls || time.Since(t0) < window {
		if err := r.do(w); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(t0).Seconds(), nil
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
	b.Log("\n" + tbl.String())
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

package bench

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// httpClients call at once, each in its own session.
	httpClients = 8
	// httpRounds of both servers, each loaded for httpSpan; the figures
	// are medians.
	httpRounds = 3
	httpSpan   = 2 * time.Second
)

// BenchmarkMCPHTTP is make bench's line for MCP over streamable HTTP:
// toolhost serve --http and the native server on the official SDK's
// streamable HTTP handler, each called by httpClients clients at once,
// every one its own session (initialize, notifications/initialized, then
// read_file of the 200-line file, one call in flight, for httpSpan). The
// servers take turns, the first rotating, after an untimed turn each
// that warms them; the figures are medians over rounds, the ratio the
// median of each round's.
func BenchmarkMCPHTTP(b *testing.B) {
	root, content := fixture(b)
	env := serverEnv()
	token := rand.Text()
	th, err := startHTTP("toolhost", []string{built.toolhost, "serve", "--http", "127.0.0.1:0", "--root", root},
		append(env, "TOOLHOST_TOKEN="+token), root, token)
	if err != nil {
		b.Fatal(err)
	}
	defer th.stop()
	native, err := startHTTP("native", []string{built.native, "-http", "127.0.0.1:0", root}, env, root, "")
	if err != nil {
		b.Fatal(err)
	}
	defer native.stop()
	srvs := []*httpServer{th, native}
	rates := map[string][]float64{}
	answers := map[string]string{}
	for r := -1; r < httpRounds; r++ {
		for i := range srvs {
			s := srvs[(r+1+i)%len(srvs)]
			span := httpSpan
			if r < 0 {
				span = httpSpan / 4
			}
			rate, answer, err := s.load(content, span)
			if err != nil {
				b.Fatal(err)
			}
			if r >= 0 {
				rates[s.name] = append(rates[s.name], rate)
			}
			answers[s.name] = answer
		}
	}
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "MCP over streamable HTTP: %d clients at once, each its own session calling read_file (200 lines) for %v; medians of %d rounds\n\n", httpClients, httpSpan, httpRounds)
	fmt.Fprintln(&tbl, "| server | calls/s | µs/call (one client's wait) | answered as |")
	fmt.Fprintln(&tbl, "|---|---:|---:|---|")
	for _, s := range srvs {
		rate := mid(append([]float64(nil), rates[s.name]...))
		b.ReportMetric(rate, s.name+"-http-calls/s")
		fmt.Fprintf(&tbl, "| %s | %.0f | %.0f | %s |\n", s.name, rate, 1e6*httpClients/rate, answers[s.name])
	}
	ratios := make([]float64, httpRounds)
	for i := range ratios {
		ratios[i] = rates["toolhost"][i] / rates["native"][i]
	}
	ratio := mid(ratios)
	b.ReportMetric(ratio, "http-x-native")
	fmt.Fprintf(&tbl, "toolhost/native HTTP calls/s: %.3g× (>1 when toolhost is faster)\n", ratio)
	b.ReportMetric(0, "ns/op")
	fmt.Print(tbl.String())
}

// load opens httpClients sessions, then has each call read_file for
// span, every answer checked, and says how many calls per second they
// made together and as what media type the server answered.
func (s *httpServer) load(content string, span time.Duration) (rate float64, answer string, err error) {
	sessions := make([]*httpSession, httpClients)
	defer func() {
		for _, sess := range sessions {
			if sess != nil {
				err = errors.Join(err, sess.close())
			}
		}
	}()
	for i := range sessions {
		if sessions[i], err = s.openSession(); err != nil {
			return 0, "", err
		}
	}
	calls := make([]int, httpClients)
	errs := make([]error, httpClients)
	var wg sync.WaitGroup
	t0 := time.Now()
	deadline := t0.Add(span)
	for i, sess := range sessions {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				r, err := sess.callTool("read_file", map[string]any{"path": readPath})
				if err == nil && r.text() != content {
					err = fmt.Errorf("%s: read_file: %d bytes that differ from the file's %d", s.name, len(r.text()), len(content))
				}
				if err != nil {
					errs[i] = err
					return
				}
				calls[i]++
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return 0, "", err
	}
	total := 0
	for _, n := range calls {
		total += n
	}
	return float64(total) / elapsed.Seconds(), sessions[0].answerType, nil
}

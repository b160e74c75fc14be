package extism_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/tests/extism"
)

// A plugin reaches only the hosts toolhost's
// configuration allow-lists for it. A request elsewhere, directly or
// through a redirect from an allowed host (go-sdk checks only the first
// request and its client follows redirects anywhere), is refused as a
// tool error naming the host and the key to set; the other host never
// sees the request, toolhost does not crash, and the plugin's next call
// works.
func TestNetworkOnlyToAllowedHosts(t *testing.T) {
	var secretHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		io.WriteString(w, "SECRET from the other host")
	}))
	defer other.Close()
	otherURL, _ := url.Parse(other.URL)
	// The same server under a name that is not allow-listed.
	elsewhere := "http://localhost:" + otherURL.Port() + "/secret"
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, elsewhere, http.StatusFound)
			return
		}
		io.WriteString(w, "hello from the allowed host")
	}))
	defer allowed.Close()

	cfg := defaultConfig(t)
	grant(cfg, "netfetch", []string{"127.0.0.1"}, nil)
	h := openHost(t, cfg, "", guest{extism.NetFetch, "netfetch.wasm"})
	fetch := func(id, u string) (ok bool, text string) {
		r := run(t, h, id, "fetch", fmt.Sprintf(`{"url": %q}`, u), nil)
		if strings.Contains(r.Content+errorOf(r), "SECRET") {
			t.Fatalf("call %s returned the other host's body: %+v", id, r)
		}
		if r.OK {
			return true, r.Content
		}
		if r.Error.Kind != abi.KindSandboxViolation {
			t.Errorf("call %s: %s, want a SandboxViolation", id, errorOf(r))
		}
		return false, r.Error.Message
	}

	if ok, text := fetch("a1", allowed.URL+"/"); !ok || text != "200 hello from the allowed host" {
		t.Fatalf("allowed host: ok %v, %q", ok, text)
	}
	for _, tt := range []struct{ id, url string }{
		{"d1", elsewhere},                  // refused by go-sdk's own check
		{"d2", allowed.URL + "/redirect"},  // refused by toolhost's guard, on the redirect
		{"d3", "file:///etc/passwd"},       // not http at all
		{"d4", "http://127.0.0.1.nip.io/"}, // a name, not the allowed address
	} {
		ok, text := fetch(tt.id, tt.url)
		if ok {
			t.Errorf("%s: %s was fetched: %q", tt.id, tt.url, text)
			continue
		}
		if !strings.Contains(text, "extism.netfetch.allowed_hosts") && !strings.Contains(text, "scheme") {
			t.Errorf("%s: message %q names neither the key to set nor the scheme", tt.id, text)
		}
	}
	if ok, text := fetch("d1", elsewhere); ok || !strings.Contains(text, `"localhost"`) {
		t.Errorf("refusal %q does not name the host", text)
	}
	if n := secretHits.Load(); n != 0 {
		t.Errorf("the host that is not allow-listed was reached %d times", n)
	}
	if ok, _ := fetch("a2", allowed.URL+"/"); !ok {
		t.Fatal("the plugin does not work after a refusal")
	}
}

// FR-EXE-03, FR-OUT-04: an Extism tool is held to the
// engine's deadline, however it spins: it is stopped at its timeout and
// the next call runs on a fresh instance; its output is cut to the cap; a
// panic, an exit and an isError result are tool errors of their kinds,
// and the plugin keeps working after each.
func TestMisbehavingPluginContained(t *testing.T) {
	cfg := defaultConfig(t)
	one := 1
	cfg.Tools.Overrides["spin"] = config.Override{TimeoutSeconds: &one}
	h := openHost(t, cfg, "", guest{extism.Misbehave, "misbehave.wasm"})
	limit := min(cfg.Tools.Output.MaxBytes, cfg.Tools.Output.AvailableCapacityBytes)

	for i := range 2 {
		start := time.Now()
		r := run(t, h, fmt.Sprintf("s%d", i), "spin", `{}`, nil)
		if r.OK || r.Error.Kind != abi.KindTimeout {
			t.Fatalf("spin: %+v, want a Timeout", r)
		}
		if took := time.Since(start); took > 6*time.Second {
			t.Errorf("spin stopped after %v, want about 1s", took)
		}
		if r := run(t, h, fmt.Sprintf("f%d", i), "flood", `{"bytes": 10}`, nil); !r.OK || r.Content != "xxxxxxxxxx" {
			t.Fatalf("the call after a timeout: %+v %s", r, errorOf(r))
		}
	}

	r := run(t, h, "big", "flood", `{"bytes": 1000000}`, nil)
	if !r.OK || len(r.Content) > limit || !strings.HasSuffix(r.Content, "[output truncated]") {
		t.Errorf("a 1 MB result: ok %v, %d bytes, want at most %d ending with the truncation marker", r.OK, len(r.Content), limit)
	}
	// 100 MB does not fit the plugin's 64 MiB: it runs out of memory
	// inside its cap, and toolhost is unharmed.
	if r := run(t, h, "huge", "flood", `{"bytes": 100000000}`, nil); r.OK || r.Error.Kind != abi.KindPanicked {
		t.Errorf("a 100 MB result: %+v, want the plugin to fail within its memory cap", r)
	}
	if r := run(t, h, "crash", "crash", `{}`, nil); r.OK || r.Error.Kind != abi.KindPanicked || !strings.Contains(r.Error.Message, "misbehave crashed on purpose") {
		t.Errorf("crash: %s, want Panicked with the guest's panic message", errorOf(r))
	}
	if r := run(t, h, "fail", "fail", `{}`, nil); r.OK || r.Error.Kind != abi.KindExecutionFailed || r.Error.Message != "fail failed: the service said no" {
		t.Errorf("fail: %s, want ExecutionFailed with the plugin's text", errorOf(r))
	}
	if r := run(t, h, "after", "flood", `{"bytes": 3}`, nil); !r.OK || r.Content != "xxx" {
		t.Fatalf("the plugin does not work after the failures: %+v %s", r, errorOf(r))
	}
}

// NFR-SEC-01: a plugin sees no file, no environment
// variable and no argument, and what it prints never reaches toolhost's
// own stdout or stderr (on serve --stdio its stdout is the MCP stream),
// even with EXTISM_ENABLE_WASI_OUTPUT set, which makes go-sdk wire them
// together.
func TestNoFilesNoEnvironmentNoOutput(t *testing.T) {
	t.Setenv("EXTISM_ENABLE_WASI_OUTPUT", "1")
	t.Setenv("TOOLHOST_TEST_SECRET", "s3cret")
	// go-sdk takes os.Stdout when it makes an instance: at load too.
	stdout, stderr := os.Stdout, os.Stderr
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	os.Stdout, os.Stderr = outW, errW
	h := openHost(t, nil, "", guest{extism.Misbehave, "misbehave.wasm"})
	r := run(t, h, "p1", "probe", `{}`, nil)
	h.Close(context.Background())
	os.Stdout, os.Stderr = stdout, stderr
	outW.Close()
	errW.Close()
	printed, _ := io.ReadAll(outR)
	printedErr, _ := io.ReadAll(errR)

	if !r.OK || r.Content != "env=0 args=0" {
		t.Errorf("probe: %+v %s, want no file read or listed, no environment, no arguments", r, errorOf(r))
	}
	if strings.Contains(string(printed)+string(printedErr), "GUEST-") {
		t.Errorf("the guest's output reached toolhost's: stdout %q stderr %q", printed, printedErr)
	}
}

package extism_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolhost/toolhost/abi"
	hostextism "github.com/toolhost/toolhost/host/internal/extism"
	"github.com/toolhost/toolhost/host/internal/tests/extism"
)

// NFR-SEC-01: an allow-listed name or pattern does not
// reach inside the machine or its network. A plugin granted "*" or
// "*.example.com" is refused loopback, private, link-local and
// unspecified addresses, whether written in the URL (127.0.0.1,
// [::ffff:127.0.0.1], 0.0.0.0), reached through a name that resolves
// there (localhost), or smuggled past a pattern in an IPv6 zone
// ([::1%25.example.com] matches *.example.com as a string); the refusal
// names the host, the address and the key to set. Only an entry naming
// the address itself (or localhost) reaches it, and a connection it
// opened is not reused by another plugin's request.
func TestInternalAddressesRefused(t *testing.T) {
	var hits atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "INTERNAL service")
	})
	v4 := httptest.NewServer(handler) // on 127.0.0.1
	defer v4.Close()
	port := mustURL(t, v4.URL).Port()
	l6, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatalf("this test needs IPv6 loopback: %v", err)
	}
	v6 := httptest.NewUnstartedServer(handler)
	v6.Listener = l6
	v6.Start()
	defer v6.Close()
	port6 := mustURL(t, v6.URL).Port()

	cfg := defaultConfig(t)
	grant(cfg, "wide", []string{"*"}, map[string]string{"tool_name": "fetch_wide"})
	grant(cfg, "pattern", []string{"*.example.com"}, map[string]string{"tool_name": "fetch_pattern"})
	grant(cfg, "local", []string{"localhost"}, map[string]string{"tool_name": "fetch_local"})
	h := openHost(t, cfg, "", guest{extism.NetFetch, "wide.wasm"}, guest{extism.NetFetch, "pattern.wasm"}, guest{extism.NetFetch, "local.wasm"})
	fetch := func(id, tool, u string) (bool, string) {
		r := run(t, h, id, tool, fmt.Sprintf(`{"url": %q}`, u), nil)
		if r.OK {
			return true, r.Content
		}
		return false, errorOf(r)
	}

	// The entry "localhost" reaches localhost; its connection stays its own.
	if ok, text := fetch("l1", "fetch_local", "http://localhost:"+port+"/"); !ok || !strings.Contains(text, "INTERNAL") {
		t.Fatalf("a plugin granted localhost: ok %v, %q", ok, text)
	}
	before := hits.Load()
	for _, tt := range []struct{ id, tool, url, host, addr string }{
		// localhost is 127.0.0.1 or ::1, whichever /etc/hosts names
		// first (Debian's names both).
		{"w1", "fetch_wide", "http://localhost:" + port + "/", "localhost", "127.0.0.1|::1"},
		{"w2", "fetch_wide", "http://127.0.0.1:" + port + "/", "127.0.0.1", "127.0.0.1"},
		{"w3", "fetch_wide", "http://[::ffff:127.0.0.1]:" + port + "/", "::ffff:127.0.0.1", "127.0.0.1"},
		{"w4", "fetch_wide", "http://0.0.0.0:" + port + "/", "0.0.0.0", "0.0.0.0"},
		{"w5", "fetch_wide", "http://[::1]:" + port6 + "/", "::1", "::1"},
		{"w6", "fetch_wide", "http://169.254.169.254:" + port + "/latest/meta-data/", "169.254.169.254", "169.254.169.254"},
		{"p1", "fetch_pattern", "http://[::1%25.example.com]:" + port6 + "/", "::1%.example.com", ""},
	} {
		ok, text := fetch(tt.id, tt.tool, tt.url)
		if ok {
			t.Errorf("%s: %s reached %s: %q", tt.id, tt.tool, tt.url, text)
			continue
		}
		if !strings.HasPrefix(text, string(abi.KindSandboxViolation)) || !strings.Contains(text, "allowed_hosts") ||
			!strings.Contains(text, fmt.Sprintf("%q", tt.host)) || !slices.ContainsFunc(strings.Split(tt.addr, "|"), func(a string) bool { return strings.Contains(text, a) }) {
			t.Errorf("%s: %s, want a SandboxViolation naming host %q, address %q and the allowed_hosts key", tt.id, text, tt.host, tt.addr)
		}
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("internal services were reached %d times by plugins not granted them", n)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Go-sdk sends plugin requests with http.DefaultClient,
// where toolhost's guard re-checks redirects and addresses. A program
// embedding toolhost that replaces that client after loading plugins (as
// tracing libraries do) must not leave a plugin's redirects unchecked:
// the plugin's calls are refused, naming what to do, until the guard is
// installed again; then the checks hold.
func TestReplacedDefaultClientRefused(t *testing.T) {
	var secretHits atomic.Int64
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		io.WriteString(w, "SECRET")
	}))
	defer secret.Close()
	elsewhere := "http://localhost:" + mustURL(t, secret.URL).Port() + "/"
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere, http.StatusFound)
	}))
	defer allowed.Close()

	cfg := defaultConfig(t)
	grant(cfg, "netfetch", []string{"127.0.0.1"}, nil)
	h := openHost(t, cfg, "", guest{extism.NetFetch, "netfetch.wasm"})
	saved := http.DefaultClient
	t.Cleanup(func() { http.DefaultClient = saved })
	http.DefaultClient = &http.Client{}

	r := run(t, h, "r1", "fetch", fmt.Sprintf(`{"url": %q}`, allowed.URL+"/"), nil)
	if r.OK || r.Error.Kind != abi.KindSandboxViolation || !strings.Contains(r.Error.Message, "extism.Guard") {
		t.Errorf("a call with the guard gone: %+v %s, want a SandboxViolation naming extism.Guard", r, errorOf(r))
	}
	hostextism.Guard()
	r = run(t, h, "r2", "fetch", fmt.Sprintf(`{"url": %q}`, allowed.URL+"/"), nil)
	if r.OK || r.Error.Kind != abi.KindSandboxViolation || !strings.Contains(r.Error.Message, `"localhost"`) {
		t.Errorf("the redirect with the guard installed again: %+v %s, want it refused naming localhost", r, errorOf(r))
	}
	if n := secretHits.Load(); n != 0 {
		t.Errorf("the host that is not allow-listed was reached %d times", n)
	}
}

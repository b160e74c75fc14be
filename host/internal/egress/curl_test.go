package egress

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
)

// TestCurl: curl, as a command would run it, fetches through the proxy
// by SOCKS5 with names resolved by the proxy (socks5h, curl's syntax
// for a proxy on a Unix socket), and is refused for an unlisted host.
// (curl --unix-socket sends origin-form requests to the socket, not
// proxy requests: curl reaches an HTTP proxy only by TCP, through the
// launcher's relay.)
func TestCurl(t *testing.T) {
	// Without curl the Go clients of the other tests cover the same
	// protocols, but where curl is required (CI) it must run.
	curl := testenv.LookPath(t, "curl", "apt-get install curl (as root)")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from the allowed server")
	}))
	defer srv.Close()
	p := proxyFor(t, Rules{Allowed: []string{"localhost"}}, nil, nil)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--proxy", "socks5h://localhost" + p.Addr(), "http://localhost:" + port + "/"}, "hello from the allowed server"},
		{[]string{"--proxy", "socks5h://localhost" + p.Addr(), "http://127.0.0.1:" + port + "/"}, "(97)"},
	} {
		out, _ := exec.Command(curl, append([]string{"-sS", "--max-time", "10"}, tc.args...)...).CombinedOutput()
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("curl %s: %s; want %q", strings.Join(tc.args, " "), out, tc.want)
		}
	}
}

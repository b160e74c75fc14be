package host_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/internal/testenv"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// launcher is a toolhost binary to confine commands with: make test's, or
// one built for this package.
func launcher(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("TOOLHOST_BIN"); bin != "" {
		return bin
	}
	dir, err := testplugin.SharedDir("host-launcher", "host/cmd/toolhost")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := testplugin.Toolhost(dir)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// A profile that narrows the network to "allowlist" where the operator's
// is "on" gets the calls' proxy: its commands reach the listed host
// through it. Before, the host made the
// proxy's directory only for an operator's allowlist, and every call of
// such a profile was refused.
func TestProfileAllowlistReachesListedHost(t *testing.T) {
	testenv.LookPath(t, "curl", "apt-get install curl (as root)")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "SERVED-BY-TEST") }))
	defer srv.Close()
	var cfg *config.Config
	h, _ := open(t, func(c *config.Config, o *host.Options) {
		cfg = c
		c.Tools.Approval.Denylist = nil
		c.Tools.Approval.Mode = "auto"
		c.Tools.RunCommand.Network = config.NetworkOn
		c.Tools.RunCommand.AllowedDomains = []string{"127.0.0.1"}
		c.Profiles = map[string]config.Profile{"net": {Tools: []string{"run_command"}, Network: config.NetworkAllowlist}}
		o.Launcher, o.StateDir = launcher(t), filepath.Join(t.TempDir(), "state")
	})
	n, err := host.Profile(cfg, "net")
	if err != nil {
		t.Fatal(err)
	}
	_, results := h.Process(context.Background(), engine.Batch{Calls: []engine.Call{
		call("c1", "run_command", `{"command": "curl -sS -m 20 `+srv.URL+`"}`),
	}}, host.BatchOptions{Approver: approveAll(), Narrowing: n})
	r := results[0]
	if !r.OK || !strings.Contains(r.Content, "SERVED-BY-TEST") {
		t.Fatalf("the profile's command did not reach the listed host through the proxy: %+v (error %+v)", r, r.Error)
	}
	if len(r.Confinement) != 1 || r.Confinement[0].Network != "allowlist" {
		t.Errorf("confinement %+v, want network allowlist", r.Confinement)
	}
}

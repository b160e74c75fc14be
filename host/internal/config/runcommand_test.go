package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/egress"
	"github.com/toolhost/toolhost/host/internal/secrets"
)

// Without a file, commands are confined writing only
// their roots, with no network and the documented limits.
func TestRunCommandDefaults(t *testing.T) {
	want := RunCommand{
		Sandbox: SandboxWorkspaceWrite, Network: NetworkOff,
		AllowedDomains: []string{}, DeniedDomains: []string{}, ExtraWritable: []string{},
		MemoryMax: 2 << 30, PidsMax: 512, CPUSeconds: 0, MaxFileSize: 1 << 30, OpenFiles: 4096,
		MaxTimeoutMS: 600_000,
		NonInteractiveEnv: []string{"CI=1", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat", "DEBIAN_FRONTEND=noninteractive",
			"npm_config_yes=true", "PIP_NO_INPUT=1", "TERM=dumb", "NO_COLOR=1"},
	}
	dir := t.TempDir()
	l, err := Load(Options{UserDir: dir, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config.Tools.RunCommand; !reflect.DeepEqual(got, want) {
		t.Errorf("defaults\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(Default().Tools.RunCommand, want) {
		t.Errorf("Default() = %+v", Default().Tools.RunCommand)
	}
}

// Sizes are bytes, or a number with a unit; K, M, G, T
// are powers of 1000 and Ki, Mi, Gi, Ti of 1024.
func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		err  string
	}{
		{in: "0", want: 0},
		{in: "4096", want: 4096},
		{in: "100B", want: 100},
		{in: "1K", want: 1000},
		{in: "1Ki", want: 1024},
		{in: "1KiB", want: 1024},
		{in: "512MiB", want: 512 << 20},
		{in: "512mb", want: 512e6},
		{in: " 3 Mi ", want: 3 << 20},
		{in: "2G", want: 2e9},
		{in: "2GiB", want: 2 << 30},
		{in: "1T", want: 1e12},
		{in: "1Ti", want: 1 << 40},
		{in: "", err: "expected a size in bytes"},
		{in: "G", err: "expected a size in bytes"},
		{in: "-1", err: "expected a size in bytes"},
		{in: "1.5G", err: `unknown unit ".5G"`},
		{in: "2 gigs", err: `unknown unit "gigs"`},
		{in: "1X", err: `unknown unit "X"`},
		{in: "1iB", err: "unknown unit"},
		{in: "18446744073709551616", err: "too large"},
		{in: "20000000Ti", err: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSize(tt.in)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("parseSize(%q) = %d, %v; want an error containing %q", tt.in, got, err, tt.err)
			case tt.err == "" && (err != nil || got != tt.want):
				t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
	// What show prints loads back to the same number.
	for _, n := range []uint64{1, 999, 1000, 1024, 1536, 2 << 30, 5e8, 1<<40 + 1, 3 << 40} {
		s := formatSize(n)
		if back, err := parseSize(s); err != nil || back != n {
			t.Errorf("formatSize(%d) = %q, which parses to %d, %v", n, s, back, err)
		}
	}
	if got := formatSize(2 << 30); got != "2GiB" {
		t.Errorf("formatSize(2GiB) = %q", got)
	}
}

// runCommandFixture lays out a fake home directory with credentials, a
// configuration directory and a directory commands may write, and
// replaces @HOME@, @USER@ (the configuration directory) and @EXTRA@ in s.
type runCommandFixture struct{ home, user, extra string }

func newRunCommandFixture(t *testing.T) runCommandFixture {
	t.Helper()
	f := runCommandFixture{home: t.TempDir(), user: t.TempDir(), extra: t.TempDir()}
	for _, d := range []string{".ssh/keys", ".config/gh", ".cache/go", ".mozilla"} {
		if err := os.MkdirAll(filepath.Join(f.home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, f.home, ".ssh/id_rsa", "PRIVATE")
	if err := os.Symlink(filepath.Join(f.home, ".ssh"), filepath.Join(f.extra, "keys")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.extra, "file", "")
	return f
}

func (f runCommandFixture) expand(s string) string {
	return strings.NewReplacer("@HOME@", f.home, "@USER@", f.user, "@EXTRA@", f.extra).Replace(s)
}

// Every invalid [tools.run_command] value
// stops Load with a message naming the key, where the value came from and
// what to write instead.
func TestRunCommandErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // the operator's toolhost.toml, after expand
		env  []string
		key  string
		msg  string
	}{
		{name: "item 6 unknown sandbox", file: "[tools.run_command]\nsandbox = \"none\"\n", key: "tools.run_command.sandbox", msg: `"none" is not one of [workspace-write read-only off]`},
		{name: "item 4 unknown network", file: "[tools.run_command]\nnetwork = \"full\"\n", key: "tools.run_command.network", msg: `"full" is not one of [off allowlist on]`},
		{name: "item 6 off without saying the network is on", file: "[tools.run_command]\nsandbox = \"off\"\n", key: "tools.run_command.sandbox", msg: `set network = "on" as well`},
		{name: "item 6 off from env", env: []string{"TOOLHOST_TOOLS_RUN_COMMAND_SANDBOX=off", "TOOLHOST_TOOLS_RUN_COMMAND_NETWORK=allowlist"}, key: "tools.run_command.sandbox", msg: `network = "allowlist" cannot hold`},
		{name: "item 4 URL for a domain", file: "[tools.run_command]\nallowed_domains = [\"https://example.com\"]\n", key: "tools.run_command.allowed_domains", msg: `"https://example.com" is not a host name or pattern; write api.example.com or *.example.com, without a scheme`},
		{name: "item 4 domain with a port", file: "[tools.run_command]\nallowed_domains = [\"example.com:443\"]\n", key: "tools.run_command.allowed_domains", msg: `"example.com:443" has a port; the proxy allows any port of a listed host`},
		{name: "item 4 every domain", file: "[tools.run_command]\nallowed_domains = [\"*\"]\n", key: "tools.run_command.allowed_domains", msg: `"*" would match every host`},
		{name: "item 4 a whole top-level domain", file: "[tools.run_command]\nallowed_domains = [\"*.com\"]\n", key: "tools.run_command.allowed_domains", msg: `"*.com" matches a whole top-level domain`},
		{name: "item 4 empty domain", file: "[tools.run_command]\nallowed_domains = [\"\"]\n", key: "tools.run_command.allowed_domains", msg: `"" is empty`},
		{name: "item 4 wildcard inside", file: "[tools.run_command]\ndenied_domains = [\"a.*.example.com\"]\n", key: "tools.run_command.denied_domains", msg: `"a.*.example.com" has a * that is not the whole first label`},
		{name: "item 4 space in a domain", file: "[tools.run_command]\ndenied_domains = [\"ex ample.com\"]\n", key: "tools.run_command.denied_domains", msg: `"ex ample.com" is not a host name: label "ex ample" has the character`},
		{name: "item 4 pattern on an address", file: "[tools.run_command]\nallowed_domains = [\"*.10.0.0.1\"]\n", key: "tools.run_command.allowed_domains", msg: "list the address itself"},
		{name: "item 1 an unclosed bracket", file: "[tools.run_command]\nallowed_domains = [\"[::1\"]\n", key: "tools.run_command.allowed_domains", msg: `"[::1" is not an IP address`},
		{name: "item 1 an unclosed bracket denied", file: "[tools.run_command]\ndenied_domains = [\"[::1\"]\n", key: "tools.run_command.denied_domains", msg: `"[::1" is not an IP address`},
		{name: "item 4 IPv6 zone", file: "[tools.run_command]\nallowed_domains = [\"fe80::1%eth0\"]\n", key: "tools.run_command.allowed_domains", msg: "IPv6 zone"},
		{name: "item 4 spaces around", file: "[tools.run_command]\nallowed_domains = [\" example.com\"]\n", key: "tools.run_command.allowed_domains", msg: "spaces around it"},
		{name: "item 4 domain from env", env: []string{"TOOLHOST_TOOLS_RUN_COMMAND_ALLOWED_DOMAINS=ok.example.com,bad!.example.com"}, key: "tools.run_command.allowed_domains", msg: "env TOOLHOST_TOOLS_RUN_COMMAND_ALLOWED_DOMAINS"},
		{name: "item 2 relative directory", file: "[tools.run_command]\nextra_writable = [\"cache\"]\n", key: "tools.run_command.extra_writable", msg: "not an absolute path; write the directory's full path"},
		{name: "item 2 unclean directory", file: "[tools.run_command]\nextra_writable = [\"@EXTRA@/x/..\"]\n", key: "tools.run_command.extra_writable", msg: "write it as"},
		{name: "item 2 root", file: "[tools.run_command]\nextra_writable = [\"/\"]\n", key: "tools.run_command.extra_writable", msg: "whole system writable"},
		{name: "item 2 missing directory", file: "[tools.run_command]\nextra_writable = [\"@EXTRA@/missing\"]\n", key: "tools.run_command.extra_writable", msg: "create the directory first, or remove it from the list"},
		{name: "item 2 a file", file: "[tools.run_command]\nextra_writable = [\"@EXTRA@/file\"]\n", key: "tools.run_command.extra_writable", msg: "is not a directory"},
		{name: "item 2 home", file: "[tools.run_command]\nextra_writable = [\"@HOME@\"]\n", key: "tools.run_command.extra_writable", msg: "whole home directory"},
		{name: "item 2 above home", file: "[tools.run_command]\nextra_writable = [\"@HOME@/..\"]\n", key: "tools.run_command.extra_writable", msg: "write it as"},
		{name: "item 2 home's parent", env: []string{"TOOLHOST_TOOLS_RUN_COMMAND_EXTRA_WRITABLE=@HOMEPARENT@"}, key: "tools.run_command.extra_writable", msg: "whole home directory"},
		{name: "item 2 ssh", file: "[tools.run_command]\nextra_writable = [\"@HOME@/.ssh\"]\n", key: "tools.run_command.extra_writable", msg: "is @HOME@/.ssh, where credentials are kept"},
		{name: "item 2 inside ssh", file: "[tools.run_command]\nextra_writable = [\"@HOME@/.ssh/keys\"]\n", key: "tools.run_command.extra_writable", msg: "lies in @HOME@/.ssh, where credentials"},
		{name: "item 2 a browser profile", file: "[tools.run_command]\nextra_writable = [\"@HOME@/.mozilla\"]\n", key: "tools.run_command.extra_writable", msg: "is @HOME@/.mozilla, where credentials are kept"},
		{name: "item 2 holding a secret", file: "[tools.run_command]\nextra_writable = [\"@HOME@/.config\"]\n", key: "tools.run_command.extra_writable", msg: "holds @HOME@/.config/gh"},
		{name: "item 2 link to ssh", file: "[tools.run_command]\nextra_writable = [\"@EXTRA@/keys\"]\n", key: "tools.run_command.extra_writable", msg: "leads to @HOME@/.ssh, which is @HOME@/.ssh"},
		{name: "item 2 etc", file: "[tools.run_command]\nextra_writable = [\"/etc\"]\n", key: "tools.run_command.extra_writable", msg: "lies in /etc, which commands never write"},
		{name: "item 2 proc", file: "[tools.run_command]\nextra_writable = [\"/proc/self\"]\n", key: "tools.run_command.extra_writable", msg: "lies in /proc"},
		{name: "item 2 shared tmp", file: "[tools.run_command]\nextra_writable = [\"/tmp\"]\n", key: "tools.run_command.extra_writable", msg: "shared by every user"},
		{name: "item 2 the configuration", file: "[tools.run_command]\nextra_writable = [\"@USER@\"]\n", key: "tools.run_command.extra_writable", msg: "toolhost's own configuration, which commands must not rewrite"},
		{name: "item 5 memory too low", file: "[tools.run_command]\nmemory_max = \"1M\"\n", key: "tools.run_command.memory_max", msg: "1M is too low for a command to start: use at least 16MiB, or 0 for no limit"},
		{name: "item 5 negative memory", file: "[tools.run_command]\nmemory_max = -1\n", key: "tools.run_command.memory_max", msg: "must be 0 or more, got -1"},
		{name: "item 5 memory in words", file: "[tools.run_command]\nmemory_max = \"lots\"\n", key: "tools.run_command.memory_max", msg: `expected a size in bytes: an integer, or a string such as "512MiB"`},
		{name: "item 5 fractional memory", file: "[tools.run_command]\nmemory_max = 1.5\n", key: "tools.run_command.memory_max", msg: "got 1.5"},
		{name: "item 5 memory from env", env: []string{"TOOLHOST_TOOLS_RUN_COMMAND_MEMORY_MAX=2 gigs"}, key: "tools.run_command.memory_max", msg: `env TOOLHOST_TOOLS_RUN_COMMAND_MEMORY_MAX: tools.run_command.memory_max: expected a size in bytes`},
		{name: "item 5 too few processes", file: "[tools.run_command]\npids_max = 2\n", key: "tools.run_command.pids_max", msg: "use at least 8, or 0 for no limit"},
		{name: "item 5 negative processes", file: "[tools.run_command]\npids_max = -1\n", key: "tools.run_command.pids_max", msg: "must be 0 (no limit) or at least 8"},
		{name: "item 5 negative cpu", file: "[tools.run_command]\ncpu_seconds = -5\n", key: "tools.run_command.cpu_seconds", msg: "must be 0 (no limit) or at least 1"},
		{name: "item 5 no file size limit", file: "[tools.run_command]\nmax_file_size = 0\n", key: "tools.run_command.max_file_size", msg: "a command always gets a file-size limit"},
		{name: "item 5 no open files", file: "[tools.run_command]\nopen_files = 0\n", key: "tools.run_command.open_files", msg: "must be between 16 and 1048576, got 0"},
		{name: "item 5 too many open files", file: "[tools.run_command]\nopen_files = 2000000\n", key: "tools.run_command.open_files", msg: "between 16 and 1048576"},
		{name: "no timeout", file: "[tools.run_command]\nmax_timeout_ms = 0\n", key: "tools.run_command.max_timeout_ms", msg: "positive number of milliseconds"},
		{name: "not an assignment", file: "[tools.run_command]\nnoninteractive_env = [\"CI\"]\n", key: "tools.run_command.noninteractive_env", msg: `"CI" is not NAME=value`},
		{name: "not a name", file: "[tools.run_command]\nnoninteractive_env = [\"A B=1\"]\n", key: "tools.run_command.noninteractive_env", msg: "is not NAME=value"},
		{name: "set twice", file: "[tools.run_command]\nnoninteractive_env = [\"CI=1\", \"CI=0\"]\n", key: "tools.run_command.noninteractive_env", msg: "CI is set twice"},
		{name: "item 6 profile turning the sandbox off", file: "[profiles.x]\ntools = []\nsandbox = \"off\"\n", key: "profiles.x.sandbox", msg: `a profile can only narrow tools.run_command.sandbox`},
		{name: "item 4 profile opening the network", file: "[profiles.x]\ntools = []\nnetwork = \"on\"\n", key: "profiles.x.network", msg: `a profile can only narrow tools.run_command.network`},
		{name: "item 4 profile without network while unconfined", file: "[tools.run_command]\nsandbox = \"off\"\nnetwork = \"on\"\n[profiles.x]\ntools = []\nnetwork = \"off\"\n",
			key: "profiles.x.network", msg: `set sandbox = "workspace-write" (or "read-only") in the profile too`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRunCommandFixture(t)
			env := []string{"HOME=" + f.home}
			for _, e := range tt.env {
				env = append(env, strings.ReplaceAll(f.expand(e), "@HOMEPARENT@", filepath.Dir(f.home)))
			}
			file := ""
			if tt.file != "" {
				file = writeFile(t, f.user, "toolhost.toml", f.expand(tt.file))
			}
			_, err := Load(Options{UserDir: f.user, Dir: t.TempDir(), Environ: env})
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if msg := f.expand(tt.msg); !strings.Contains(err.Error(), msg) {
				t.Errorf("error %q, want it to contain %q", err, msg)
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != tt.key {
				t.Errorf("error %v: want a KeyError for %s", err, tt.key)
			}
			if file != "" && tt.env == nil && !strings.Contains(err.Error(), file) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// The operator's file and environment may set everything a
// project cannot: no sandbox, the host's network, domains, writable
// directories, shared caches, higher or no limits.
func TestRunCommandOperatorWidens(t *testing.T) {
	f := newRunCommandFixture(t)
	cache := filepath.Join(f.home, ".cache", "go")
	tests := []struct {
		name string
		file string
		env  []string
		want func(*RunCommand)
	}{
		{name: "file", file: `[tools.run_command]
sandbox = "off"
network = "on"
allowed_domains = ["example.com"]
extra_writable = ["@HOME@/.cache/go", "@EXTRA@"]
share_caches = true
memory_max = 0
pids_max = 0
cpu_seconds = 600
max_file_size = "10GiB"
open_files = 65536
max_timeout_ms = 3600000
noninteractive_env = []
`, want: func(r *RunCommand) {
			*r = RunCommand{Sandbox: SandboxOff, Network: NetworkOn, AllowedDomains: []string{"example.com"}, DeniedDomains: []string{},
				ExtraWritable: []string{cache, f.extra}, ShareCaches: true, CPUSeconds: 600, MaxFileSize: 10 << 30, OpenFiles: 65536,
				MaxTimeoutMS: 3_600_000, NonInteractiveEnv: []string{}}
		}},
		{name: "environment", env: []string{
			"TOOLHOST_TOOLS_RUN_COMMAND_SANDBOX=read-only",
			"TOOLHOST_TOOLS_RUN_COMMAND_NETWORK=allowlist",
			"TOOLHOST_TOOLS_RUN_COMMAND_ALLOWED_DOMAINS=proxy.golang.org, *.example.com,127.0.0.1",
			"TOOLHOST_TOOLS_RUN_COMMAND_DENIED_DOMAINS=evil.example.com",
			"TOOLHOST_TOOLS_RUN_COMMAND_EXTRA_WRITABLE=@EXTRA@",
			"TOOLHOST_TOOLS_RUN_COMMAND_SHARE_CACHES=true",
			"TOOLHOST_TOOLS_RUN_COMMAND_MEMORY_MAX=4Gi",
			"TOOLHOST_TOOLS_RUN_COMMAND_PIDS_MAX=1024",
			"TOOLHOST_TOOLS_RUN_COMMAND_CPU_SECONDS=30",
			"TOOLHOST_TOOLS_RUN_COMMAND_MAX_FILE_SIZE=5000000",
			"TOOLHOST_TOOLS_RUN_COMMAND_OPEN_FILES=100",
			"TOOLHOST_TOOLS_RUN_COMMAND_MAX_TIMEOUT_MS=1000",
			"TOOLHOST_TOOLS_RUN_COMMAND_NONINTERACTIVE_ENV=CI=true,PAGER=cat",
		}, want: func(r *RunCommand) {
			*r = RunCommand{Sandbox: SandboxReadOnly, Network: NetworkAllowlist,
				AllowedDomains: []string{"proxy.golang.org", "*.example.com", "127.0.0.1"}, DeniedDomains: []string{"evil.example.com"},
				ExtraWritable: []string{f.extra}, ShareCaches: true, MemoryMax: 4 << 30, PidsMax: 1024, CPUSeconds: 30, MaxFileSize: 5e6, OpenFiles: 100,
				MaxTimeoutMS: 1000, NonInteractiveEnv: []string{"CI=true", "PAGER=cat"}}
		}},
		{name: "environment beats the file", file: "[tools.run_command]\nmemory_max = \"1GiB\"\n", env: []string{"TOOLHOST_TOOLS_RUN_COMMAND_MEMORY_MAX=3GiB"},
			want: func(r *RunCommand) { r.MemoryMax = 3 << 30 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := []string{"HOME=" + f.home}
			for _, e := range tt.env {
				env = append(env, f.expand(e))
			}
			user := t.TempDir()
			if tt.file != "" {
				writeFile(t, user, "toolhost.toml", f.expand(tt.file))
			}
			l, err := Load(Options{UserDir: user, Dir: t.TempDir(), Environ: env})
			if err != nil {
				t.Fatal(err)
			}
			want := defaultRunCommand()
			tt.want(&want)
			if got := l.Config.Tools.RunCommand; !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			for _, e := range tt.env {
				name, _, _ := strings.Cut(e, "=")
				key := "tools.run_command." + strings.ToLower(strings.TrimPrefix(name, "TOOLHOST_TOOLS_RUN_COMMAND_"))
				if got := l.Sources[key]; got != "env "+name {
					t.Errorf("Sources[%s] = %q, want env %s", key, got, name)
				}
			}
		})
	}
}

// A project narrows how commands are confined and never
// widens it; what it cannot set is reported with the key and who can set
// it (the file is added by Load).
func TestNarrowedByRunCommand(t *testing.T) {
	const who = "only the operator's configuration (--config, $TOOLHOST_CONFIG or the user configuration directory) or TOOLHOST_TOOLS_RUN_COMMAND_"
	tests := []struct {
		name     string
		operator func(*RunCommand) // from the defaults
		project  func(*RunCommand) // from the operator's
		want     func(*RunCommand) // the narrowed table, from the operator's
		ignored  []string          // keys named in the ignored entries
		why      string            // in the first ignored entry
	}{
		{name: "sandbox off", project: func(p *RunCommand) { p.Sandbox, p.Network = SandboxOff, NetworkOn },
			ignored: []string{"tools.run_command.sandbox", "tools.run_command.network"}, why: `"off" is less strict than the operator's "workspace-write"; ` + who + "SANDBOX can"},
		{name: "read-only", project: func(p *RunCommand) { p.Sandbox = SandboxReadOnly }, want: func(c *RunCommand) { c.Sandbox = SandboxReadOnly }},
		{name: "back to workspace-write", operator: func(c *RunCommand) { c.Sandbox = SandboxReadOnly }, project: func(p *RunCommand) { p.Sandbox = SandboxWorkspaceWrite },
			ignored: []string{"tools.run_command.sandbox"}, why: `"workspace-write" is less strict than the operator's "read-only"`},
		{name: "confine the unconfined", operator: func(c *RunCommand) { c.Sandbox, c.Network = SandboxOff, NetworkOn },
			project: func(p *RunCommand) { p.Sandbox, p.Network = SandboxWorkspaceWrite, NetworkOff },
			want:    func(c *RunCommand) { c.Sandbox, c.Network = SandboxWorkspaceWrite, NetworkOff }},
		{name: "network off while unconfined", operator: func(c *RunCommand) { c.Sandbox, c.Network = SandboxOff, NetworkOn },
			project: func(p *RunCommand) { p.Network = NetworkOff },
			ignored: []string{"tools.run_command.network"}, why: `set sandbox = "workspace-write" or "read-only" in the same file`},
		{name: "network on", project: func(p *RunCommand) { p.Network = NetworkOn }, ignored: []string{"tools.run_command.network"}, why: who + "NETWORK can"},
		{name: "network allowlist", project: func(p *RunCommand) { p.Network = NetworkAllowlist }, ignored: []string{"tools.run_command.network"}, why: `"allowlist" is less strict than the operator's "off"`},
		{name: "allowlist to off", operator: func(c *RunCommand) { c.Network = NetworkAllowlist }, project: func(p *RunCommand) { p.Network = NetworkOff },
			want: func(c *RunCommand) { c.Network = NetworkOff }},
		{name: "fewer domains", operator: func(c *RunCommand) { c.AllowedDomains = []string{"a.example", "b.example"} },
			project: func(p *RunCommand) { p.AllowedDomains = []string{"b.example"} }, want: func(c *RunCommand) { c.AllowedDomains = []string{"b.example"} }},
		{name: "more domains", operator: func(c *RunCommand) { c.AllowedDomains = []string{"a.example"} },
			project: func(p *RunCommand) { p.AllowedDomains = []string{"a.example", "evil.example"} },
			ignored: []string{"tools.run_command.allowed_domains"}, why: `adding "evil.example" would widen the operator's list; ignored; ` + who + "ALLOWED_DOMAINS can"},
		{name: "more denied domains", operator: func(c *RunCommand) { c.DeniedDomains = []string{"a.example"} },
			project: func(p *RunCommand) { p.DeniedDomains = []string{"a.example", "b.example"} }, want: func(c *RunCommand) { c.DeniedDomains = []string{"a.example", "b.example"} }},
		{name: "fewer denied domains", operator: func(c *RunCommand) { c.DeniedDomains = []string{"a.example"} }, project: func(p *RunCommand) { p.DeniedDomains = []string{} },
			ignored: []string{"tools.run_command.denied_domains"}, why: `leaving out "a.example" would widen the operator's list; kept`},
		{name: "more writable", project: func(p *RunCommand) { p.ExtraWritable = []string{"/srv/cache"} },
			ignored: []string{"tools.run_command.extra_writable"}, why: `adding "/srv/cache" would widen`},
		{name: "fewer writable", operator: func(c *RunCommand) { c.ExtraWritable = []string{"/srv/a", "/srv/b"} },
			project: func(p *RunCommand) { p.ExtraWritable = []string{"/srv/b"} }, want: func(c *RunCommand) { c.ExtraWritable = []string{"/srv/b"} }},
		{name: "share caches", project: func(p *RunCommand) { p.ShareCaches = true }, ignored: []string{"tools.run_command.share_caches"}, why: "SHARE_CACHES can"},
		{name: "stop sharing caches", operator: func(c *RunCommand) { c.ShareCaches = true }, project: func(p *RunCommand) { p.ShareCaches = false },
			want: func(c *RunCommand) { c.ShareCaches = false }},
		{name: "less memory", project: func(p *RunCommand) { p.MemoryMax = 1 << 30 }, want: func(c *RunCommand) { c.MemoryMax = 1 << 30 }},
		{name: "more memory", project: func(p *RunCommand) { p.MemoryMax = 8 << 30 },
			ignored: []string{"tools.run_command.memory_max"}, why: "8GiB is above the operator's 2GiB"},
		{name: "no memory limit", project: func(p *RunCommand) { p.MemoryMax = 0 },
			ignored: []string{"tools.run_command.memory_max"}, why: "0 (no limit) would lift the operator's 2GiB"},
		{name: "a memory limit where none", operator: func(c *RunCommand) { c.MemoryMax = 0 }, project: func(p *RunCommand) { p.MemoryMax = 1 << 30 },
			want: func(c *RunCommand) { c.MemoryMax = 1 << 30 }},
		{name: "fewer processes", project: func(p *RunCommand) { p.PidsMax = 64 }, want: func(c *RunCommand) { c.PidsMax = 64 }},
		{name: "no process limit", project: func(p *RunCommand) { p.PidsMax = 0 }, ignored: []string{"tools.run_command.pids_max"}, why: "0 (no limit) would lift the operator's 512"},
		{name: "a cpu limit", project: func(p *RunCommand) { p.CPUSeconds = 60 }, want: func(c *RunCommand) { c.CPUSeconds = 60 }},
		{name: "lift the cpu limit", operator: func(c *RunCommand) { c.CPUSeconds = 60 }, project: func(p *RunCommand) { p.CPUSeconds = 0 },
			ignored: []string{"tools.run_command.cpu_seconds"}, why: "0 (no limit) would lift the operator's 60"},
		{name: "larger files", project: func(p *RunCommand) { p.MaxFileSize = 2 << 30 }, ignored: []string{"tools.run_command.max_file_size"}, why: "2GiB is above the operator's 1GiB"},
		{name: "smaller files", project: func(p *RunCommand) { p.MaxFileSize = 1e6 }, want: func(c *RunCommand) { c.MaxFileSize = 1e6 }},
		{name: "more open files", project: func(p *RunCommand) { p.OpenFiles = 1 << 16 }, ignored: []string{"tools.run_command.open_files"}, why: "65536 is above the operator's 4096"},
		{name: "fewer open files", project: func(p *RunCommand) { p.OpenFiles = 256 }, want: func(c *RunCommand) { c.OpenFiles = 256 }},
		{name: "a shorter timeout", project: func(p *RunCommand) { p.MaxTimeoutMS = 1000 }, want: func(c *RunCommand) { c.MaxTimeoutMS = 1000 }},
		{name: "a longer timeout", project: func(p *RunCommand) { p.MaxTimeoutMS = 6_000_000 }, ignored: []string{"tools.run_command.max_timeout_ms"}, why: "6000000 is above the operator's 600000"},
		{name: "variables for every command", project: func(p *RunCommand) { p.NonInteractiveEnv = append(p.NonInteractiveEnv, "LD_PRELOAD=/x.so") },
			ignored: []string{"tools.run_command.noninteractive_env"}, why: "only the operator's configuration can"},
		{name: "no variables", project: func(p *RunCommand) { p.NonInteractiveEnv = []string{} },
			ignored: []string{"tools.run_command.noninteractive_env"}, why: "only the operator's configuration can"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			operator := Default()
			if tt.operator != nil {
				tt.operator(&operator.Tools.RunCommand)
			}
			p := operator.clone()
			tt.project(&p.Tools.RunCommand)
			want := operator.clone()
			if tt.want != nil {
				tt.want(&want.Tools.RunCommand)
			}
			got, ignored := operator.NarrowedBy(p)
			if !reflect.DeepEqual(got.Tools.RunCommand, want.Tools.RunCommand) {
				t.Errorf("narrowed\n got %+v\nwant %+v", got.Tools.RunCommand, want.Tools.RunCommand)
			}
			if len(ignored) != len(tt.ignored) {
				t.Fatalf("ignored %q, want entries for %q", ignored, tt.ignored)
			}
			for i, key := range tt.ignored {
				if !strings.HasPrefix(ignored[i], key+": ") {
					t.Errorf("ignored[%d] = %q, want it for %s", i, ignored[i], key)
				}
			}
			if len(ignored) > 0 && !strings.Contains(ignored[0], tt.why) {
				t.Errorf("ignored %q, want it to say %q", ignored[0], tt.why)
			}
		})
	}
}

// Through Load, a trusted project file that tries to
// turn the sandbox off, open the network or lift limits changes none of
// it, and Report names the file, each key and who can set it; one that
// narrows takes effect, its keys sourced to it. An untrusted one changes
// nothing.
func TestProjectFileRunCommand(t *testing.T) {
	const attack = `[tools.run_command]
sandbox = "off"
network = "on"
allowed_domains = ["evil.example.com"]
extra_writable = ["@WS@"]
share_caches = true
memory_max = 0
pids_max = 100000
`
	const narrowing = `[tools.run_command]
sandbox = "read-only"
denied_domains = ["tracker.example.com"]
memory_max = "512MiB"
open_files = 1024
`
	tests := []struct {
		name, file string
		trusted    bool
		check      func(t *testing.T, ws string, l *Loaded)
	}{
		{name: "untrusted attack", file: attack, check: func(t *testing.T, ws string, l *Loaded) {
			if !reflect.DeepEqual(l.Config.Tools.RunCommand, defaultRunCommand()) || len(l.Ignored) > 0 {
				t.Errorf("changed by an untrusted file: %+v, ignored %q", l.Config.Tools.RunCommand, l.Ignored)
			}
		}},
		{name: "trusted attack", file: attack, trusted: true, check: func(t *testing.T, ws string, l *Loaded) {
			if !reflect.DeepEqual(l.Config.Tools.RunCommand, defaultRunCommand()) {
				t.Errorf("widened by a trusted file: %+v", l.Config.Tools.RunCommand)
			}
			file := filepath.Join(ws, "toolhost.toml")
			report := l.Report()
			for _, key := range []string{"sandbox", "network", "allowed_domains", "extra_writable", "share_caches", "memory_max", "pids_max"} {
				want := "# ignored setting: " + file + ": tools.run_command." + key + ": "
				i := strings.Index(report, want)
				if i < 0 {
					t.Errorf("Report lacks %q:\n%s", want, report)
					continue
				}
				line, _, _ := strings.Cut(report[i:], "\n")
				if !strings.Contains(line, "only the operator's configuration") || !strings.Contains(line, EnvVar("tools.run_command."+key)) {
					t.Errorf("%q does not say who can set it", line)
				}
			}
		}},
		{name: "trusted narrowing", file: narrowing, trusted: true, check: func(t *testing.T, ws string, l *Loaded) {
			want := defaultRunCommand()
			want.Sandbox, want.DeniedDomains, want.MemoryMax, want.OpenFiles = SandboxReadOnly, []string{"tracker.example.com"}, 512<<20, 1024
			if got := l.Config.Tools.RunCommand; !reflect.DeepEqual(got, want) || len(l.Ignored) > 0 {
				t.Errorf("got %+v, ignored %q\nwant %+v", got, l.Ignored, want)
			}
			for _, key := range []string{"sandbox", "denied_domains", "memory_max", "open_files"} {
				if got := l.Sources["tools.run_command."+key]; got != "project file "+filepath.Join(ws, "toolhost.toml") {
					t.Errorf("Sources[%s] = %q", key, got)
				}
			}
			if got := l.Sources["tools.run_command.network"]; got != "default" {
				t.Errorf("an unset key's source is %q", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, userDir := t.TempDir(), t.TempDir()
			writeFile(t, ws, "toolhost.toml", strings.ReplaceAll(tt.file, "@WS@", ws))
			if tt.trusted {
				if _, err := Trust(userDir, ws); err != nil {
					t.Fatal(err)
				}
			}
			l, err := Load(Options{UserDir: userDir, Dir: ws, Environ: []string{"HOME=" + t.TempDir()}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(l.Files, func(f File) bool { return f.Role == RoleProject && f.Read == tt.trusted }) {
				t.Errorf("files %+v", l.Files)
			}
			tt.check(t, ws, l)
		})
	}
}

// A profile's sandbox and network only make the
// policy's stricter.
func TestRunCommandForProfile(t *testing.T) {
	tests := []struct {
		name        string
		policy      func(*RunCommand)
		profile     Profile
		wantSandbox CommandSandbox
		wantNetwork CommandNetwork
	}{
		{"keeps", nil, Profile{}, SandboxWorkspaceWrite, NetworkOff},
		{"read-only", nil, Profile{Sandbox: SandboxReadOnly}, SandboxReadOnly, NetworkOff},
		{"workspace-write under read-only", func(r *RunCommand) { r.Sandbox = SandboxReadOnly }, Profile{Sandbox: SandboxWorkspaceWrite}, SandboxReadOnly, NetworkOff},
		{"allowlist under off", nil, Profile{Network: NetworkAllowlist}, SandboxWorkspaceWrite, NetworkOff},
		{"off under allowlist", func(r *RunCommand) { r.Network = NetworkAllowlist }, Profile{Network: NetworkOff}, SandboxWorkspaceWrite, NetworkOff},
		{"confined under off", func(r *RunCommand) { r.Sandbox, r.Network = SandboxOff, NetworkOn },
			Profile{Sandbox: SandboxWorkspaceWrite, Network: NetworkOff}, SandboxWorkspaceWrite, NetworkOff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := defaultRunCommand()
			if tt.policy != nil {
				tt.policy(&r)
			}
			before := r
			got := r.forProfile(tt.profile)
			if got.Sandbox != tt.wantSandbox || got.Network != tt.wantNetwork {
				t.Errorf("got %q, %q; want %q, %q", got.Sandbox, got.Network, tt.wantSandbox, tt.wantNetwork)
			}
			if !reflect.DeepEqual(r, before) {
				t.Error("forProfile changed the policy")
			}
		})
	}
}

// toolhost config show prints every [tools.run_command] key with its
// value (sizes with their unit) and source, and config init documents
// each one in words (checked for every key by
// TestInitFileIsTheDefaults).
func TestShowRunCommand(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "toolhost.toml", "[tools.run_command]\nmax_file_size = 1000000\n[profiles.ci]\ntools = [\"run_command\"]\nsandbox = \"read-only\"\n")
	l, err := Load(Options{UserDir: dir, Dir: dir, Environ: []string{"TOOLHOST_TOOLS_RUN_COMMAND_NETWORK=allowlist"}})
	if err != nil {
		t.Fatal(err)
	}
	show := l.Show()
	for _, want := range []string{
		`tools.run_command.sandbox = "workspace-write"  # default`,
		`tools.run_command.network = "allowlist"  # env TOOLHOST_TOOLS_RUN_COMMAND_NETWORK`,
		`tools.run_command.allowed_domains = []  # default`,
		`tools.run_command.denied_domains = []  # default`,
		`tools.run_command.extra_writable = []  # default`,
		`tools.run_command.share_caches = false  # default`,
		`tools.run_command.memory_max = "2GiB"  # default`,
		`tools.run_command.pids_max = 512  # default`,
		`tools.run_command.cpu_seconds = 0  # default`,
		`tools.run_command.max_file_size = "1M"  # file ` + file,
		`tools.run_command.open_files = 4096  # default`,
		`profiles.ci.sandbox = "read-only"  # file ` + file,
		`profiles.ci.network = ""  # default`,
	} {
		if !strings.Contains(show, want+"\n") {
			t.Errorf("Show lacks %q:\n%s", want, show)
		}
	}
	for key := range keyKinds() {
		if k, ok := strings.CutPrefix(key, "tools.run_command."); ok && !strings.Contains(InitFile(), "\n"+k+" = ") {
			t.Errorf("InitFile does not document %s", key)
		}
	}
}

// The configuration accepts a domain entry
// exactly when the proxy does (egress.CheckDomain is the one check), less
// patterns over a whole top-level domain, which only the configuration
// refuses; "[::1" once passed Load and then stopped the host at start.
func TestDomainsAgreeWithTheProxy(t *testing.T) {
	tests := []struct {
		domain string
		ok     bool // Load accepts it
	}{
		{"example.com", true}, {"Example.COM.", true}, {"_dmarc.example.com", true},
		{"*.example.com", true}, {"*.co.uk", true}, {"a-b.example", true}, {"xn--bcher-kva.example", true},
		{"localhost", true}, {"127.0.0.1", true}, {"::1", true}, {"[::1]", true}, {"10.0.0.1", true},
		{"[::1", false}, {"::1]", false}, {"[::1]:443", false}, {"1::2::3", false}, {"example.com:443", false},
		{"https://example.com", false}, {"", false}, {"*", false}, {"a.*.example.com", false},
		{"*.10.0.0.1", false}, {"fe80::1%eth0", false}, {" example.com", false}, {"a..example", false},
		{"*.com", false}, {"*.COM.", false},
	}
	for _, tt := range tests {
		t.Run(tt.domain, func(t *testing.T) {
			err := domains([]string{tt.domain})
			if (err == nil) != tt.ok {
				t.Fatalf("domains(%q) = %v, want ok=%v", tt.domain, err, tt.ok)
			}
			proxy := egress.CheckDomain(tt.domain)
			if tt.ok && proxy != nil {
				t.Errorf("the configuration accepts %q, the proxy refuses it: %v", tt.domain, proxy)
			}
			if !tt.ok && proxy == nil && wholeTLD(tt.domain) == nil {
				t.Errorf("the configuration refuses %q (%v) for a reason the proxy does not share", tt.domain, err)
			}
			if _, err := egress.ParseRules([]string{tt.domain}, nil); (err == nil) != (proxy == nil) {
				t.Errorf("ParseRules and CheckDomain disagree on %q", tt.domain)
			}
		})
	}
}

// The configuration refuses, as extra_writable,
// every secret the confinement hides, since both read secrets.Home();
// with a shorter copy here, extra_writable = ["~/.mozilla"] passed Load
// and then every call failed.
func TestExtraWritableRefusesEverySecret(t *testing.T) {
	home := t.TempDir()
	for _, rel := range secrets.Home() {
		t.Run(rel, func(t *testing.T) {
			dir := filepath.Join(home, rel)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			r := defaultRunCommand()
			r.ExtraWritable = []string{dir}
			err := r.CheckExtraWritable(home, nil)
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != "tools.run_command.extra_writable" || !strings.Contains(err.Error(), dir+", where credentials are kept") {
				t.Errorf("CheckExtraWritable(%s) = %v; want a KeyError naming the secret", dir, err)
			}
		})
	}
}

// toolhost config init describes read-only mode
// as the confinement builds it: the roots and extra_writable read-only,
// the private tmp and the tool caches still writable (a command that
// could write nothing would fail every build).
func TestInitFileDescribesReadOnly(t *testing.T) {
	text := strings.Join(strings.Fields(strings.ReplaceAll(InitFile(), "\n# ", " ")), " ")
	for _, want := range []string{
		"read-only: the same, except that the roots and extra_writable stay read-only",
		"a private $TMPDIR, the tool caches (see share_caches)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("InitFile lacks %q", want)
		}
	}
	if strings.Contains(text, "write only their private $TMPDIR") {
		t.Error("InitFile still says read-only commands write only their $TMPDIR")
	}
}

// HiddenName is the name rules of Sanitize alone: the denylist always,
// the secret-name rules unless keep names the variable.
func TestHiddenName(t *testing.T) {
	e := Environment{Denylist: []string{"CORP_*"}, Keep: []string{"BUILD_PASSPHRASE", "SERVICE_TOKEN"}}
	for _, tt := range []struct{ name, want string }{
		{"GITHUB_TOKEN", "the denylist glob *_TOKEN"},
		{"SERVICE_TOKEN", "the denylist glob *_TOKEN"}, // keep cannot override the denylist
		{"aws_region", "the denylist glob AWS_*"},
		{"CORP_URL", "the denylist glob CORP_*"},
		{"MY_PASSPHRASE", "secret-looking name"},
		{"BUILD_PASSPHRASE", ""},
		{"GOFLAGS", ""},
		{"PWD", ""},
	} {
		got := e.HiddenName(tt.name)
		if tt.want == "" && got != "" || tt.want != "" && !strings.HasPrefix(got, tt.want) {
			t.Errorf("HiddenName(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

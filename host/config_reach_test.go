package host

import (
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/jobs"
)

// reachProbe is how one configuration key is followed to the part of
// toolhost that uses it: set changes it from its default, and observe
// reads what that part was given, never the configuration itself.
type reachProbe struct {
	set     func(t *testing.T, c *config.Config)
	observe func(t *testing.T, c *config.Config) any
}

// reachedEngine is the engine's configuration converted from c.
func reachedEngine(t *testing.T, c *config.Config) engine.Config {
	t.Helper()
	st, err := fromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return st.engine
}

func reachedPolicy(t *testing.T, c *config.Config) engine.Policy {
	t.Helper()
	return reachedEngine(t, c).Policy
}

// reachedProfile is what the profile "p" (reachBase) narrows.
func reachedProfile(t *testing.T, c *config.Config) engine.Narrowing {
	t.Helper()
	n, err := Profile(c, "p")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// reachedJournal opens the journal c configures in a new state directory.
func reachedJournal(t *testing.T, c *config.Config) *journalProbe {
	t.Helper()
	ctx := context.Background()
	j, err := inside.OpenJournal(ctx, c.Journal, t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &journalProbe{path: filepath.Base(j.Path()), maxPreimage: j.MaxPreimageBytes()}
}

type journalProbe struct {
	path        string
	maxPreimage int64
}

// prunedAfter records a finished batch in the journal c configures and
// tells how many batches pruning removes d later: what the retention
// decides.
func prunedAfter(t *testing.T, c *config.Config, d time.Duration) int64 {
	t.Helper()
	ctx := context.Background()
	j, err := inside.OpenJournal(ctx, c.Journal, t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	step := engine.JournalStep{Batch: &engine.JournalBatch{ID: "b1"}, End: true}
	if err := inside.EngineJournal(j).Record(ctx, "b1", step); err != nil {
		t.Fatal(err)
	}
	st, err := j.Prune(ctx, time.Now().Add(d))
	if err != nil {
		t.Fatal(err)
	}
	return st.Batches
}

func intPtr(n int) *int    { return &n }
func boolPtr(b bool) *bool { return &b }

// reachProbes follows every key config.Keys lists, but those in
// reachedElsewhere, to what the host converts it into.
func reachProbes(t *testing.T) map[string]reachProbe {
	t.Helper()
	extra := t.TempDir()
	tools := func(f func(*config.Tools)) func(*testing.T, *config.Config) {
		return func(_ *testing.T, c *config.Config) { f(&c.Tools) }
	}
	policy := func(f func(engine.Policy) any) func(*testing.T, *config.Config) any {
		return func(t *testing.T, c *config.Config) any { return f(reachedPolicy(t, c)) }
	}
	eng := func(f func(engine.Config) any) func(*testing.T, *config.Config) any {
		return func(t *testing.T, c *config.Config) any { return f(reachedEngine(t, c)) }
	}
	sb := func(t *testing.T, c *config.Config) settings {
		st, err := fromConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	cmd := func(f func(s commandProbe) any) func(*testing.T, *config.Config) any {
		return func(t *testing.T, c *config.Config) any {
			rules, err := commandRules(c)
			if err != nil {
				t.Fatal(err)
			}
			s := commandSettings(c)
			return f(commandProbe{mode: string(s.Mode), network: string(s.Network), extra: s.ExtraWritable, share: s.ShareCaches,
				limits:  [5]uint64{s.Limits.MemoryBytes, s.Limits.Pids, s.Limits.CPUSeconds, s.Limits.FileSizeBytes, s.Limits.OpenFiles},
				allowed: rules.Allowed, denied: rules.Denied})
		}
	}
	jobsOpt := func(f func(jobs.Options) any) func(*testing.T, *config.Config) any {
		return func(t *testing.T, c *config.Config) any {
			m, err := openJobs(c.Tools.Jobs, "", slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			return f(m.Options())
		}
	}
	profile := func(f func(engine.Narrowing) any) func(*testing.T, *config.Config) any {
		return func(t *testing.T, c *config.Config) any { return f(reachedProfile(t, c)) }
	}
	setProfile := func(f func(*config.Profile)) func(*testing.T, *config.Config) {
		return func(_ *testing.T, c *config.Config) {
			p := c.Profiles["p"]
			f(&p)
			c.Profiles["p"] = p
		}
	}
	grant := func(f func(config.ExtismPlugin) any) func(*testing.T, *config.Config) any {
		return func(_ *testing.T, c *config.Config) any {
			g := extismGrants(c.Extism)["x"]
			return f(config.ExtismPlugin{AllowedHosts: g.AllowedHosts, Config: g.Config, MaxMemoryMiB: g.MaxMemoryMiB})
		}
	}
	setGrant := func(f func(*config.ExtismPlugin)) func(*testing.T, *config.Config) {
		return func(_ *testing.T, c *config.Config) {
			p := c.Extism["x"]
			f(&p)
			c.Extism["x"] = p
		}
	}
	override := func(f func(engine.Override) any) func(*testing.T, *config.Config) any {
		return func(t *testing.T, c *config.Config) any { return f(reachedPolicy(t, c).Overrides["read_file"]) }
	}
	setOverride := func(f func(*config.Override)) func(*testing.T, *config.Config) {
		return func(_ *testing.T, c *config.Config) {
			o := c.Tools.Overrides["read_file"]
			f(&o)
			c.Tools.Overrides["read_file"] = o
		}
	}
	return map[string]reachProbe{
		"tools.mode":                              {tools(func(t *config.Tools) { t.Mode = config.ModeParseOnly }), policy(func(p engine.Policy) any { return p.Mode })},
		"tools.allow_parallel":                    {tools(func(t *config.Tools) { t.AllowParallel = true }), policy(func(p engine.Policy) any { return p.AllowParallel })},
		"tools.max_tool_calls_per_batch":          {tools(func(t *config.Tools) { t.MaxToolCallsPerBatch = 3 }), policy(func(p engine.Policy) any { return p.MaxCallsPerBatch })},
		"tools.max_tool_iterations_per_user_turn": {tools(func(t *config.Tools) { t.MaxToolIterationsPerUserTurn = 2 }), policy(func(p engine.Policy) any { return p.MaxIterationsPerTurn })},
		"tools.max_tool_args_bytes":               {tools(func(t *config.Tools) { t.MaxToolArgsBytes = 1000 }), eng(func(e engine.Config) any { return e.MaxArgsBytes })},

		"tools.sandbox.allowed_roots":            {tools(func(t *config.Tools) { t.Sandbox.AllowedRoots = []string{extra} }), func(t *testing.T, c *config.Config) any { return sb(t, c).sandbox.Roots }},
		"tools.sandbox.denied_patterns":          {tools(func(t *config.Tools) { t.Sandbox.DeniedPatterns = []string{"**/*.secret"} }), func(t *testing.T, c *config.Config) any { return sb(t, c).sandbox.DeniedPatterns }},
		"tools.sandbox.allow_absolute":           {tools(func(t *config.Tools) { t.Sandbox.AllowAbsolute = true }), func(t *testing.T, c *config.Config) any { return sb(t, c).sandbox.AllowAbsolute }},
		"tools.sandbox.include_default_denies":   {tools(func(t *config.Tools) { t.Sandbox.IncludeDefaultDenies = false }), func(t *testing.T, c *config.Config) any { return sb(t, c).sandbox.IncludeDefaultDenies }},
		"tools.sandbox.read_only_patterns":       {tools(func(t *config.Tools) { t.Sandbox.ReadOnlyPatterns = []string{"vendor/**"} }), func(t *testing.T, c *config.Config) any { return sb(t, c).sandbox.ReadOnlyPatterns }},
		"tools.sandbox.max_path_bytes":           {tools(func(t *config.Tools) { t.Sandbox.MaxPathBytes = 1000 }), func(t *testing.T, c *config.Config) any { return sb(t, c).sandbox.MaxPathBytes }},
		"tools.sandbox.max_path_component_bytes": {tools(func(t *config.Tools) { t.Sandbox.MaxPathComponentBytes = 100 }), func(t *testing.T, c *config.Config) any { return sb(t, c).sandbox.MaxComponentBytes }},
		"tools.sandbox.max_path_depth":           {tools(func(t *config.Tools) { t.Sandbox.MaxPathDepth = 10 }), func(t *testing.T, c *config.Config) any { return sb(t, c).sandbox.MaxDepth }},

		"tools.timeouts.default_seconds":         {tools(func(t *config.Tools) { t.Timeouts.DefaultSeconds = 5 }), eng(func(e engine.Config) any { return e.Timeouts.Default })},
		"tools.timeouts.file_operations_seconds": {tools(func(t *config.Tools) { t.Timeouts.FileOperationsSeconds = 6 }), eng(func(e engine.Config) any { return e.Timeouts.FileOperations })},
		"tools.timeouts.shell_commands_seconds":  {tools(func(t *config.Tools) { t.Timeouts.ShellCommandsSeconds = 7 }), eng(func(e engine.Config) any { return e.Timeouts.ShellCommands })},
		"tools.output.max_bytes":                 {tools(func(t *config.Tools) { t.Output.MaxBytes = 2048 }), eng(func(e engine.Config) any { return e.Limits.MaxOutputBytes })},
		"tools.output.available_capacity_bytes":  {tools(func(t *config.Tools) { t.Output.AvailableCapacityBytes = 4096 }), eng(func(e engine.Config) any { return e.Limits.AvailableCapacityBytes })},
		"tools.environment.denylist":             {tools(func(t *config.Tools) { t.Environment.Denylist = []string{"MY_*"} }), eng(func(e engine.Config) any { return e.EnvDenylist })},
		"tools.environment.keep":                 {tools(func(t *config.Tools) { t.Environment.Keep = []string{"SSH_AUTH_SOCK"} }), eng(func(e engine.Config) any { return e.EnvKeep })},
		"tools.read_file.max_file_read_bytes":    {tools(func(t *config.Tools) { t.ReadFile.MaxFileReadBytes = 100 }), eng(func(e engine.Config) any { return e.Limits.MaxFileReadBytes })},
		"tools.read_file.max_scan_bytes":         {tools(func(t *config.Tools) { t.ReadFile.MaxScanBytes = 1000 }), eng(func(e engine.Config) any { return e.Limits.MaxScanBytes })},
		"tools.apply_patch.max_patch_bytes":      {tools(func(t *config.Tools) { t.ApplyPatch.MaxPatchBytes = 1000 }), eng(func(e engine.Config) any { return e.Limits.MaxPatchBytes })},
		"tools.apply_patch.max_files":            {tools(func(t *config.Tools) { t.ApplyPatch.MaxFiles = 3 }), eng(func(e engine.Config) any { return e.MaxCommitFiles })},

		"tools.approval.enabled":                {tools(func(t *config.Tools) { t.Approval.Enabled = false }), policy(func(p engine.Policy) any { return p.Disabled })},
		"tools.approval.mode":                   {tools(func(t *config.Tools) { t.Approval.Mode = config.ApprovalDeny }), policy(func(p engine.Policy) any { return p.Approval })},
		"tools.approval.allowlist":              {tools(func(t *config.Tools) { t.Approval.Allowlist = []string{"list_directory"} }), policy(func(p engine.Policy) any { return p.Allowlist })},
		"tools.approval.denylist":               {tools(func(t *config.Tools) { t.Approval.Denylist = []string{} }), policy(func(p engine.Policy) any { return p.Denylist })},
		"tools.approval.prompt_side_effects":    {tools(func(t *config.Tools) { t.Approval.PromptSideEffects = false }), policy(func(p engine.Policy) any { return p.SideEffectsUnprompted })},
		"tools.approval.auto_approve_new_files": {tools(func(t *config.Tools) { t.Approval.AutoApproveNewFiles = false }), policy(func(p engine.Policy) any { return p.AutoApproveNewFiles })},
		"tools.approval.code_patterns":          {tools(func(t *config.Tools) { t.Approval.CodePatterns = []string{"**/.envrc"} }), policy(func(p engine.Policy) any { return p.CodePatterns })},

		"tools.run_command.sandbox":            {tools(func(t *config.Tools) { t.RunCommand.Sandbox = config.SandboxReadOnly }), cmd(func(s commandProbe) any { return s.mode })},
		"tools.run_command.network":            {tools(func(t *config.Tools) { t.RunCommand.Network = config.NetworkAllowlist }), cmd(func(s commandProbe) any { return s.network })},
		"tools.run_command.allowed_domains":    {tools(func(t *config.Tools) { t.RunCommand.AllowedDomains = []string{"example.com"} }), cmd(func(s commandProbe) any { return s.allowed })},
		"tools.run_command.denied_domains":     {tools(func(t *config.Tools) { t.RunCommand.DeniedDomains = []string{"example.com"} }), cmd(func(s commandProbe) any { return s.denied })},
		"tools.run_command.extra_writable":     {tools(func(t *config.Tools) { t.RunCommand.ExtraWritable = []string{extra} }), cmd(func(s commandProbe) any { return s.extra })},
		"tools.run_command.share_caches":       {tools(func(t *config.Tools) { t.RunCommand.ShareCaches = true }), cmd(func(s commandProbe) any { return s.share })},
		"tools.run_command.memory_max":         {tools(func(t *config.Tools) { t.RunCommand.MemoryMax = 64 << 20 }), cmd(func(s commandProbe) any { return s.limits[0] })},
		"tools.run_command.pids_max":           {tools(func(t *config.Tools) { t.RunCommand.PidsMax = 9 }), cmd(func(s commandProbe) any { return s.limits[1] })},
		"tools.run_command.cpu_seconds":        {tools(func(t *config.Tools) { t.RunCommand.CPUSeconds = 5 }), cmd(func(s commandProbe) any { return s.limits[2] })},
		"tools.run_command.max_file_size":      {tools(func(t *config.Tools) { t.RunCommand.MaxFileSize = 1 << 20 }), cmd(func(s commandProbe) any { return s.limits[3] })},
		"tools.run_command.open_files":         {tools(func(t *config.Tools) { t.RunCommand.OpenFiles = 64 }), cmd(func(s commandProbe) any { return s.limits[4] })},
		"tools.jobs.ring_bytes":                {tools(func(t *config.Tools) { t.Jobs.RingBytes = 12345 }), jobsOpt(func(o jobs.Options) any { return o.RingBytes })},
		"tools.jobs.max_per_conversation":      {tools(func(t *config.Tools) { t.Jobs.MaxPerConversation = 3 }), jobsOpt(func(o jobs.Options) any { return o.MaxPerConversation })},
		"tools.jobs.max_total":                 {tools(func(t *config.Tools) { t.Jobs.MaxTotal = 5 }), jobsOpt(func(o jobs.Options) any { return o.MaxTotal })},
		"tools.jobs.max_seconds":               {tools(func(t *config.Tools) { t.Jobs.MaxSeconds = 7 }), jobsOpt(func(o jobs.Options) any { return o.MaxDuration })},
		"tools.jobs.session_end_grace_seconds": {tools(func(t *config.Tools) { t.Jobs.SessionEndGraceSeconds = 2 }), jobsOpt(func(o jobs.Options) any { return o.SessionEndGrace })},
		"tools.jobs.keep_output_bytes":         {tools(func(t *config.Tools) { t.Jobs.KeepOutputBytes = 1 << 20 }), jobsOpt(func(o jobs.Options) any { return o.KeepOutputBytes })},
		"tools.jobs.keep_total_bytes":          {tools(func(t *config.Tools) { t.Jobs.KeepTotalBytes = 1 << 28 }), jobsOpt(func(o jobs.Options) any { return o.KeepTotalBytes })},
		"tools.run_command.max_timeout_ms":     {tools(func(t *config.Tools) { t.RunCommand.MaxTimeoutMS = 1500 }), eng(func(e engine.Config) any { return e.ExecMaxTimeout })},
		"tools.run_command.noninteractive_env": {tools(func(t *config.Tools) { t.RunCommand.NonInteractiveEnv = []string{"CI=0"} }),
			eng(func(e engine.Config) any { return e.NonInteractiveEnv })},

		"tools.overrides.<tool>.timeout_seconds":   {setOverride(func(o *config.Override) { o.TimeoutSeconds = intPtr(9) }), override(func(o engine.Override) any { return o.Timeout })},
		"tools.overrides.<tool>.requires_approval": {setOverride(func(o *config.Override) { o.RequiresApproval = boolPtr(true) }), override(func(o engine.Override) any { return o.RequiresApproval != nil && *o.RequiresApproval })},
		"tools.overrides.<tool>.denied":            {setOverride(func(o *config.Override) { o.Denied = boolPtr(true) }), override(func(o engine.Override) any { return o.Denied })},
		"tools.definitions": {
			tools(func(t *config.Tools) {
				t.Definitions = []config.Definition{{Name: "lookup", Description: "d", Parameters: map[string]any{"type": "object"}}}
			}),
			policy(func(p engine.Policy) any { return len(p.Definitions) }),
		},

		"profiles.<name>.tools":                    {setProfile(func(p *config.Profile) { p.Tools = []string{"read_file"} }), profile(func(n engine.Narrowing) any { return n.Tools })},
		"profiles.<name>.mode":                     {setProfile(func(p *config.Profile) { p.Mode = config.ModeParseOnly }), profile(func(n engine.Narrowing) any { return n.Mode })},
		"profiles.<name>.approval":                 {setProfile(func(p *config.Profile) { p.Approval = config.ApprovalDeny }), profile(func(n engine.Narrowing) any { return n.Approval })},
		"profiles.<name>.confirm_all":              {setProfile(func(p *config.Profile) { p.ConfirmAll = true }), profile(func(n engine.Narrowing) any { return n.ConfirmAll })},
		"profiles.<name>.sequential":               {setProfile(func(p *config.Profile) { p.Sequential = true }), profile(func(n engine.Narrowing) any { return n.Sequential })},
		"profiles.<name>.max_tool_calls_per_batch": {setProfile(func(p *config.Profile) { p.MaxToolCallsPerBatch = 2 }), profile(func(n engine.Narrowing) any { return n.MaxCallsPerBatch })},
		"profiles.<name>.sandbox":                  {setProfile(func(p *config.Profile) { p.Sandbox = config.SandboxReadOnly }), profile(func(n engine.Narrowing) any { return n.CommandSandbox })},
		"profiles.<name>.network":                  {setProfile(func(p *config.Profile) { p.Network = config.NetworkOff }), profile(func(n engine.Narrowing) any { return n.CommandNetwork })},

		"extism.<name>.allowed_hosts":  {setGrant(func(p *config.ExtismPlugin) { p.AllowedHosts = []string{"example.com"} }), grant(func(g config.ExtismPlugin) any { return g.AllowedHosts })},
		"extism.<name>.config":         {setGrant(func(p *config.ExtismPlugin) { p.Config = map[string]string{"k": "v"} }), grant(func(g config.ExtismPlugin) any { return g.Config })},
		"extism.<name>.max_memory_mib": {setGrant(func(p *config.ExtismPlugin) { p.MaxMemoryMiB = 32 }), grant(func(g config.ExtismPlugin) any { return g.MaxMemoryMiB })},

		"journal.path": {
			func(t *testing.T, c *config.Config) { c.Journal.Path = filepath.Join(t.TempDir(), "elsewhere.db") },
			func(t *testing.T, c *config.Config) any { return reachedJournal(t, c).path },
		},
		"journal.max_preimage_bytes": {
			func(_ *testing.T, c *config.Config) { c.Journal.MaxPreimageBytes = 1000 },
			func(t *testing.T, c *config.Config) any { return reachedJournal(t, c).maxPreimage },
		},
		"journal.retention_days": {
			func(_ *testing.T, c *config.Config) { c.Journal.RetentionDays = 2 },
			func(t *testing.T, c *config.Config) any { return prunedAfter(t, c, 3*24*time.Hour) },
		},
	}
}

// commandProbe is what the confiner and the calls' proxies are given.
type commandProbe struct {
	mode, network   string
	extra           []string
	share           bool
	limits          [5]uint64
	allowed, denied []string
}

// reachedElsewhere are the keys package host does not convert, and who
// does: the server imports host, so what only toolhost serve uses is
// converted in the command line.
var reachedElsewhere = map[string]string{
	"server.token":                 "toolhost serve's bearer token (cmd/toolhost serveToken; e2e TestServeTokenFromConfig)",
	"server.approval_hold_seconds": "toolhost serve's hold for calls no client can be asked about (cmd/toolhost serverOptions)",
	"server.approvals":             "who toolhost serve lets decide a call (cmd/toolhost serverOptions into server.Options.Approvals; server TestApprovalsModes)",
	"profiles.<name>.description":  "a note for the operator, shown by toolhost config show; nothing else reads it",
	"profiles.<name>.approvals":    "who toolhost serve lets decide the profile's calls (cmd/toolhost serverOptions into server.Options.ConsoleProfiles; server TestApprovalsProfile)",
}

// reachBase is the defaults with one profile ("p"), one override
// (read_file) and one Extism grant ("x") for the tables' keys to change.
func reachBase() *config.Config {
	c := config.Default()
	c.Profiles["p"] = config.Profile{Tools: []string{"read_file", "write_file"}}
	c.Tools.Overrides["read_file"] = config.Override{}
	c.Extism["x"] = config.ExtismPlugin{AllowedHosts: []string{}, Config: map[string]string{}, MaxMemoryMiB: config.DefaultExtismMaxMemoryMiB}
	return c
}

// Every key config knows arrives, changed, in the part of toolhost that
// uses it (the engine's policy and limits, the file sandbox, the
// confiner and the proxies' rules, a profile's narrowing, an Extism
// plugin's grant, the journal), through the host's conversion: a key
// the host forgot, or converted from the wrong field, leaves what that
// part sees unchanged. A new key fails here until it is followed.
func TestEveryKeyReachesItsConsumer(t *testing.T) {
	probes := reachProbes(t)
	for _, key := range config.Keys() {
		_, probed := probes[key]
		_, elsewhere := reachedElsewhere[key]
		if probed == elsewhere {
			t.Errorf("%s: followed %v, converted elsewhere %v; say where it arrives (reachProbes) or who converts it (reachedElsewhere)", key, probed, elsewhere)
		}
	}
	for key := range probes {
		if !slices.Contains(config.Keys(), key) {
			t.Errorf("reachProbes follows %s, which config does not know", key)
		}
	}
	for key, p := range probes {
		t.Run(key, func(t *testing.T) {
			base, changed := reachBase(), reachBase()
			p.set(t, changed)
			if err := changed.Validate(); err != nil {
				t.Fatalf("the changed value is not valid: %v", err)
			}
			before, after := p.observe(t, base), p.observe(t, changed)
			if reflect.DeepEqual(before, after) {
				t.Errorf("changing %s does not reach its consumer: it sees %v either way", key, after)
			}
		})
	}
}

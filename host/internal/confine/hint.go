package confine

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// maxHintLines bounds a hint: one line per distinct path, network and
// refused operations at most once each.
const maxHintLines = 5

// hintScan bounds how much of stderr Hint reads: its end, where the
// errors that stopped a command are.
const hintScan = 1 << 20

// denial phrases, as tools print them (testdata/hint holds real samples).
var (
	writeDenied = []string{
		"Read-only file system", "read-only file system",
		"Permission denied", "permission denied",
		"Operation not permitted", "operation not permitted",
	}
	// notFound are ENOENT's words, and dash's for a missing directory on
	// the way to a file it creates.
	notFound = []string{"No such file or directory", "no such file or directory", "Directory nonexistent"}
	// busy is what moving or removing a mount point gives (EBUSY): a
	// repository's .git, hooks or config, toolhost's configuration.
	busy = []string{"Device or resource busy", "device or resource busy"}
	// netDown are what tools print when no route or name server answers:
	// the network namespace of network = "off".
	netDown = []string{
		"Could not resolve host", "Temporary failure in name resolution",
		"Name or service not known", "No address associated with hostname",
		"Network is unreachable", "network is unreachable",
		"getaddrinfo ENOTFOUND", "getaddrinfo EAI_AGAIN",
		"module lookup disabled by GOPROXY=off",
	}
	// proxyRefused are what tools print when the proxy answered 403.
	proxyRefused = []string{"CONNECT tunnel failed, response 403", "Tunnel connection failed: 403", "allowed_domains"}
	// curlConnect is curl's failure to connect, naming the host.
	curlConnect = regexp.MustCompile(`Failed to connect to (\S+) port`)
	quoted      = regexp.MustCompile(`'([^']+)'|‘([^’]+)’|"([^"]+)"`)
	quotedAfter = regexp.MustCompile(`^[:,]\s*(?:[a-z]+\s+)?(?:'([^']+)'|‘([^’]+)’|"([^"]+)")`)
)

// Hint returns the lines to append to a command's output when stderr
// shows an operation the policy denied: which path, why,
// what is writable, and that retrying will not help, so that a model
// stops retrying blindly. A failure the policy did not cause (a file
// missing, a write to a read-only file inside the root) gets no hint. ""
// when there is nothing to say.
func Hint(p *Policy, stderr []byte) string {
	if p == nil {
		return ""
	}
	if len(stderr) > hintScan {
		stderr = stderr[len(stderr)-hintScan:]
	}
	h := newHinter(p)
	for line := range bytes.Lines(stderr) {
		if len(h.lines) == maxHintLines {
			break
		}
		h.line(string(bytes.TrimRight(line, "\r\n")))
	}
	return strings.Join(h.lines, "\n")
}

type hinter struct {
	p     *Policy
	last  map[string]int // p.Mounts by target (lastByTarget)
	seen  map[string]bool
	lines []string
	// ws and rs name the writable trees (writable) and the roots (roots),
	// and below holds every directory with a mount strictly inside it
	// (mountsBelow), each made once: a policy can hold thousands of
	// mounts, and stderr thousands of denials.
	ws, rs string
	below  map[string]bool
}

func newHinter(p *Policy) *hinter {
	h := &hinter{p: p, last: lastByTarget(p.Mounts), seen: map[string]bool{}, below: map[string]bool{}}
	h.ws, h.rs = writableTrees(p.Mounts), rootTrees(p)
	for _, m := range p.Mounts {
		for a := filepath.Dir(m.Target); !h.below[a]; a = filepath.Dir(a) {
			h.below[a] = true
			if a == "/" || a == "." {
				break
			}
		}
	}
	return h
}

func (h *hinter) add(key, line string) {
	if h.seen[key] || len(h.lines) == maxHintLines {
		return
	}
	h.seen[key] = true
	h.lines = append(h.lines, line)
}

func (h *hinter) line(l string) {
	if i, _ := index(l, busy); i >= 0 {
		h.pinned(l)
		return
	}
	if i, ph := index(l, writeDenied); i >= 0 {
		path := pathAround(l, i, len(ph))
		if path == "" {
			if strings.EqualFold(ph, "operation not permitted") {
				h.add("op", "sandbox: the operation was refused: commands may not create namespaces, mount, trace other processes, load kernel code or use io_uring. Retrying will not help.")
			}
			return
		}
		if ph != "Read-only file system" && ph != "read-only file system" && reads(l) {
			h.read(path)
			return
		}
		h.write(path)
		return
	}
	if i, ph := index(l, notFound); i >= 0 {
		if path := pathAround(l, i, len(ph)); path != "" {
			h.hidden(path)
			h.unseen(path)
		}
		return
	}
	h.network(l)
}

// write explains a refused write to path, unless the policy lets commands
// write there (then the refusal was the file's own).
func (h *hinter) write(path string) {
	abs := h.abs(path)
	m := h.effective(abs)
	if m != nil && (m.Kind == MountWrite || m.Kind == MountTmpfs || m.Kind == MountStage) {
		return
	}
	if m != nil && m.Kind == MountHide {
		h.hidden(path)
		return
	}
	var why string
	switch {
	case h.p.Mode == ModeReadOnly && h.inRoot(abs):
		h.add(abs, fmt.Sprintf(`sandbox: write to %s denied: commands run read-only here ([tools.run_command] sandbox = "read-only"); writable: $TMPDIR (/tmp). Retrying will not help.`, abs))
		return
	case m == nil:
		why = "it is outside every directory commands may write"
	case m.Target == abs:
		why = "it is read-only for commands"
	default:
		why = m.Target + " is read-only for commands"
	}
	h.add(abs, fmt.Sprintf("sandbox: write to %s denied: %s; writable: %s. Retrying will not help.", abs, why, h.writable()))
}

// pinned explains a refused move or removal of a path the policy
// mounts: the quoted paths of the line are looked up, since mv names the
// source first and Python the source before the destination.
func (h *hinter) pinned(l string) {
	for _, m := range quoted.FindAllStringSubmatch(l, -1) {
		abs := h.abs(firstNonEmpty(m[1:]))
		if _, ok := h.last[abs]; ok {
			h.add(abs, fmt.Sprintf("sandbox: %s cannot be moved or removed: the sandbox keeps it in place (a repository's git directory, hooks or config, toolhost's configuration, or a directory the sandbox provides). Retrying will not help.", abs))
			return
		}
	}
}

// read explains a refused read of path outside everything commands see;
// one inside a mount was refused by the file's own permissions.
func (h *hinter) read(path string) {
	abs := h.abs(path)
	switch m := h.effective(abs); {
	case m == nil:
		h.add(abs, fmt.Sprintf("sandbox: reading %s denied: commands see only the roots (%s), $TMPDIR (/tmp), system and toolchain directories. Retrying will not help.", abs, h.roots()))
	case m.Kind == MountHide:
		h.hidden(path)
	}
}

// hidden explains a path a hide mount covers; other missing files are the
// command's business.
func (h *hinter) hidden(path string) {
	abs := h.abs(path)
	if m := h.effective(abs); m != nil && m.Kind == MountHide {
		h.add(m.Target, fmt.Sprintf("sandbox: %s is hidden from commands (it holds secrets or toolhost's own state). Retrying will not help.", m.Target))
	}
}

// unseen explains a missing absolute path that lies in a directory the
// host has but the sandbox does not show: a path of the host's /tmp or
// /var/tmp (inside, both are the call's private tmp), or of a tree no
// mount shows. A model told only "No such file or directory" would make
// the directory in the private tmp and write there, and the file would
// be gone when the call ends. A path missing on the host too, or one
// the sandbox shows as the host has it, is the command's business; so
// are paths in the scratch $HOME and the secrets, whose presence on the
// host a hint must not tell.
func (h *hinter) unseen(path string) {
	if !filepath.IsAbs(path) {
		return
	}
	abs := filepath.Clean(path)
	if underAny(abs, h.secrets()) {
		return
	}
	d := onHost(abs)
	m := h.effective(d)
	switch {
	case d == "" || h.mountsBelow(d):
		return // the launcher makes d, to hold a mount
	case m == nil:
		h.add(abs, fmt.Sprintf("sandbox: %s is outside what commands can see: they see only the roots (%s), $TMPDIR (/tmp), system and toolchain directories; writable: %s. Retrying will not help.", abs, h.roots(), h.writable()))
	case m.Kind != MountWrite || m.Source == m.Target || d == m.Target:
		return // hidden, the scratch $HOME, shown as the host has it, or the mount itself
	case pathPresent(filepath.Join(m.Source, strings.TrimPrefix(d, m.Target))):
		return // the call's own directory has it too
	case m.Target == "/tmp" || m.Target == "/var/tmp":
		h.add(abs, fmt.Sprintf("sandbox: %s is outside what commands can see; %s is this call's private directory, removed when it ends; writable: %s. Retrying will not help.", abs, m.Target, h.writable()))
	default:
		h.add(abs, fmt.Sprintf("sandbox: %s is outside what commands can see; %s is toolhost's directory for this root, not the host's; writable: %s. Retrying will not help.", abs, m.Target, h.writable()))
	}
}

// onHost is the deepest of path and its parents that exists on the host.
func onHost(path string) string {
	for d := path; ; d = filepath.Dir(d) {
		if pathPresent(d) {
			return d
		}
		if d == "/" || d == "." {
			return ""
		}
	}
}

// mountsBelow reports whether a mount's target lies strictly inside d:
// the launcher makes d in the new root to hold it.
func (h *hinter) mountsBelow(d string) bool { return h.below[d] }

// secrets are the paths commands may never read, for the home and
// environment the command ran with.
func (h *hinter) secrets() []string {
	env := envMap(h.p.Env)
	return secretPaths(env["HOME"], env)
}

func (h *hinter) network(l string) {
	switch h.p.Network {
	case NetworkOff:
		if _, ph := index(l, netDown); ph != "" || refusedHost(l) {
			h.add("net", `sandbox: commands have no network ([tools.run_command] network = "off"): only loopback inside the sandbox; use what is already downloaded (GOPROXY=off, offline caches). Retrying will not help.`)
		}
	case NetworkAllowlist:
		if _, ph := index(l, proxyRefused); ph != "" {
			h.add("net", "sandbox: commands reach the network only through toolhost's proxy, and only the domains in [tools.run_command] allowed_domains; this one is not allowed. Retrying will not help.")
		} else if _, ph := index(l, netDown); ph != "" || refusedHost(l) {
			h.add("net", "sandbox: commands reach the network only through toolhost's proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY are set), for the domains in [tools.run_command] allowed_domains; a program that ignores those variables cannot connect. Retrying will not help.")
		}
	}
}

// refusedHost reports a curl connection failure to a host that is not
// loopback: with no network, only loopback answers.
func refusedHost(l string) bool {
	m := curlConnect.FindStringSubmatch(l)
	if m == nil {
		return false
	}
	host := strings.Trim(m[1], "[]")
	return host != "localhost" && !strings.HasPrefix(host, "127.") && host != "::1"
}

// effective is the mount that decides what path is inside: the deepest
// holding it, the latest of equals (the launcher's order), found as
// Build finds it (deciding).
func (h *hinter) effective(path string) *Mount { return deciding(h.p.Mounts, h.last, path) }

func (h *hinter) inRoot(path string) bool {
	m := h.effective(path)
	return m != nil && m.Kind == MountRead && m.Source == m.Target && within(h.p.Dir, m.Target)
}

func (h *hinter) abs(path string) string {
	if !filepath.IsAbs(path) {
		path = filepath.Join(h.p.Dir, path)
	}
	return filepath.Clean(path)
}

// writable names the trees commands may write (writableTrees).
func (h *hinter) writable() string { return h.ws }

// writableTrees names the trees commands may write: the host directories
// bound writable at their own paths (the roots and extra_writable), not
// those inside another (a .git made a mount point), then $TMPDIR. One
// pass, and a lookup per level of each path.
func writableTrees(mounts []Mount) string {
	own := map[string]bool{} // targets bound writable at their own path
	for _, m := range mounts {
		if m.Kind == MountWrite && m.Source == m.Target {
			own[m.Target] = true
		}
	}
	var ws []string
	for _, m := range mounts {
		if m.Kind == MountWrite && m.Source == m.Target && !ownAbove(own, m.Target) {
			ws = append(ws, m.Target)
		}
	}
	return strings.Join(append(ws, "$TMPDIR (/tmp)"), ", ")
}

// ownAbove reports whether a strict ancestor of p is in own.
func ownAbove(own map[string]bool, p string) bool {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if own[d] {
			return true
		}
		if d == "/" || d == "." {
			return false
		}
	}
}

// roots names the host trees commands see at their own paths, writable
// or not.
func (h *hinter) roots() string { return h.rs }

func rootTrees(p *Policy) string {
	var rs []string
	for _, m := range p.Mounts {
		if (m.Kind == MountWrite || m.Kind == MountRead) && m.Source == m.Target && within(p.Dir, m.Target) {
			rs = append(rs, m.Target)
		}
	}
	return strings.Join(rs, ", ")
}

// reads reports whether an error line is about reading: listing or
// opening for reading, by the tools that say so.
func reads(l string) bool {
	for _, v := range readVerbs {
		if strings.Contains(l, v) {
			return true
		}
	}
	for _, tool := range readTools {
		if strings.HasPrefix(l, tool+": ") {
			return true
		}
	}
	return false
}

var (
	readVerbs = []string{"cannot open directory", "cannot access", "cannot read", "cannot stat", "cannot open '", "cannot open ‘", "opendir", "scandir", "lstat ", "stat "}
	readTools = []string{"cat", "ls", "find", "head", "tail", "less", "more", "grep", "du", "wc", "stat", "file", "diff", "cmp", "sha256sum", "md5sum"}
)

// index finds the first of phrases in l.
func index(l string, phrases []string) (int, string) {
	for _, ph := range phrases {
		if i := strings.Index(l, ph); i >= 0 {
			return i, ph
		}
	}
	return -1, ""
}

// pathAround finds the path an error line is about, around the phrase at
// l[i:i+n]. Tools put it after the phrase (Python's "Permission denied:
// '/x'", Node's "read-only file system, open '/x'"), quoted before it
// (GNU's "cannot touch '/x': ..."; mv's last quoted path is the
// destination), or bare just before it (dash's "cannot create /x: ...",
// Go's "mkdir /x: read-only file system", bash's "line 1: /x: ...").
func pathAround(l string, i, n int) string {
	after, before := l[i+n:], l[:i]
	if m := quotedAfter.FindStringSubmatch(after); m != nil {
		return firstNonEmpty(m[1:])
	}
	if ms := quoted.FindAllStringSubmatch(before, -1); ms != nil {
		return firstNonEmpty(ms[len(ms)-1][1:])
	}
	fields := strings.Fields(strings.TrimRight(before, ": "))
	if len(fields) == 0 {
		return ""
	}
	tok := strings.TrimSuffix(fields[len(fields)-1], ":")
	if strings.Contains(tok, "/") || strings.HasPrefix(tok, ".") {
		return tok
	}
	if len(fields) > 1 && strings.Contains(" create mkdir open touch remove ", " "+fields[len(fields)-2]+" ") {
		return tok
	}
	if len(fields) > 2 && fields[len(fields)-3] == "line" && bashLineNumber(fields[len(fields)-2]) {
		// bash's redirection error names a relative path bare:
		// "bash: line 2: out.txt: Read-only file system".
		return tok
	}
	return ""
}

// bashLineNumber reports whether f is bash's "N:" after "line".
func bashLineNumber(f string) bool {
	n, ok := strings.CutSuffix(f, ":")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func firstNonEmpty(ss []string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// UncoveredHint is the line to append to a command's output when the
// call left git directories nested in a root unprotected because there
// were more than a call protects (maxNestedMounts, Policy.Unprotected):
// their hooks and config were writable during the call. "" otherwise.
//
// A search cut by its entry bound gets no line: a large project (a
// node_modules) cuts it at every call, and a line in every output would
// teach a model to ignore them; it is recorded in the result's
// confinement (Applied.Uncovered) and logged. The bound hit here is a
// fact about this root the user can act on, and rare.
func UncoveredHint(p *Policy) string {
	if p == nil || len(p.Unprotected) == 0 {
		return ""
	}
	return fmt.Sprintf("sandbox: %s holds more nested git repositories than a command's sandbox protects (see the result's confinement, uncovered); the newest kept their hooks and config writable; remove or move the nested repositories the project does not need.", strings.Join(p.Unprotected, ", "))
}

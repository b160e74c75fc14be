package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/readcache"
	"github.com/toolhost/toolhost/host/registry"
	"github.com/toolhost/toolhost/host/runtime"
	"github.com/toolhost/toolhost/host/sandbox"
)

// runFlags are the flags of commands that run tool calls.
type runFlags struct {
	roots  []string
	allow  []string
	stream bool
}

func (rf *runFlags) register(fl *pflag.FlagSet) {
	fl.StringArrayVar(&rf.roots, "root", nil, "allowed root directory (repeatable; the first is the working directory; default: tools.sandbox.allowed_roots)")
	fl.StringArrayVar(&rf.allow, "allow", nil, "approve this tool's calls without asking, even if denylisted (repeatable)")
	fl.BoolVar(&rf.stream, "stream", false, "copy streamed output (run_command's stdout and stderr) to stderr as it arrives")
}

// host is everything a command needs to run tool calls.
type host struct {
	log   *slog.Logger
	rt    *runtime.Runtime
	reg   *registry.Registry
	sb    *sandbox.Sandbox
	eng   *engine.Engine
	store *readcache.Store
	allow []string

	mu     sync.Mutex // calls of a parallel batch load caches concurrently
	caches map[string]*readcache.Cache
}

// openHost loads the configuration, the plugins and the sandbox. The
// caller closes the host.
func openHost(ctx context.Context, g *globals, rf *runFlags) (*host, error) {
	log := g.logger()
	settings, err := g.settings()
	if err != nil {
		return nil, err
	}
	stateDir, err := g.state()
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	sbCfg := settings.sandbox
	if len(rf.roots) > 0 {
		sbCfg.Roots = rf.roots
	}
	sbCfg.ProtectedDirs = protected(stateDir, g.cache())
	sb, err := sandbox.New(sbCfg)
	if err != nil {
		return nil, usageErrorf("sandbox: %v", err)
	}
	store, err := readcache.NewStore(filepath.Join(stateDir, "reads"))
	if err != nil {
		sb.Close()
		return nil, usageErrorf("state directory %s: %v", stateDir, err)
	}
	rt, reg, err := loadRegistry(ctx, g, log)
	if err != nil {
		sb.Close()
		return nil, err
	}
	h := &host{log: log, rt: rt, reg: reg, sb: sb, store: store, caches: map[string]*readcache.Cache{}, allow: rf.allow}
	ecfg := settings.engine
	ecfg.Registry, ecfg.Sandbox, ecfg.Logger = reg, sb, log
	ecfg.ReadCache = h.readCache
	// --allow TOOL runs TOOL even when the denylist names it: the person
	// at the terminal is the approver.
	ecfg.Policy.Denylist = slices.DeleteFunc(slices.Clone(ecfg.Policy.Denylist), func(t string) bool { return slices.Contains(rf.allow, t) })
	h.eng = engine.New(ecfg)
	return h, nil
}

func (h *host) Close(ctx context.Context) {
	h.rt.Close(ctx)
	h.sb.Close()
}

// readCache returns a conversation's read cache, loaded from the state
// directory on first use.
func (h *host) readCache(conversation string) *readcache.Cache {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.caches[conversation]; ok {
		return c
	}
	c, err := h.store.Load(conversation)
	if err != nil {
		h.log.Error("cannot load the read cache; files this conversation read count as unread", "conversation", conversation, "err", err)
		c = readcache.New()
	}
	h.caches[conversation] = c
	return c
}

// save writes back the read caches of the conversations used.
func (h *host) save() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for conv, c := range h.caches {
		if err := h.store.Save(conv, c); err != nil {
			h.log.Error("cannot save the read cache; the next call may refuse to overwrite what this one read", "conversation", conv, "err", err)
		}
	}
}

// approver decides confirmations at the CLI: tools named by --allow are
// approved; otherwise a person at a terminal is asked, and without a
// terminal the call is denied with a message saying what would allow it.
type approver struct {
	allow []string
	in    io.Reader
	out   io.Writer
	tty   bool
}

func newApprover(allow []string) *approver {
	return &approver{allow: allow, in: os.Stdin, out: os.Stderr, tty: term.IsTerminal(int(os.Stdin.Fd()))}
}

func (a *approver) decide(_ context.Context, cs []engine.Confirmation) engine.Decision {
	var approved []string
	var ask []engine.Confirmation
	for _, c := range cs {
		if slices.Contains(a.allow, c.Tool) {
			approved = append(approved, c.CallID)
		} else {
			ask = append(ask, c)
		}
	}
	if len(ask) == 0 {
		return engine.ApproveSelected("--allow", approved...)
	}
	if !a.tty {
		tools := make([]string, 0, len(ask))
		for _, c := range ask {
			tools = append(tools, c.Tool)
		}
		slices.Sort(tools)
		tools = slices.Compact(tools)
		by := fmt.Sprintf("policy: no terminal to ask on (pass --allow %s, or add it to tools.approval.allowlist)", strings.Join(tools, " --allow "))
		return engine.ApproveSelected(by, approved...)
	}
	r := bufio.NewReader(a.in)
	for _, c := range ask {
		fmt.Fprintf(a.out, "\n%s risk: %s\n  reason: %s\nApprove call %s? [y/N] ", strings.ToUpper(string(c.Risk)), c.Summary, c.Reason, c.CallID)
		line, _ := r.ReadString('\n')
		if answer := strings.ToLower(strings.TrimSpace(line)); answer == "y" || answer == "yes" {
			approved = append(approved, c.CallID)
		}
	}
	return engine.ApproveSelected("the user at the terminal", approved...)
}

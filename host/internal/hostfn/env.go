package hostfn

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// Event is a chunk of streamed output a plugin emitted.
type Event struct {
	CallID string
	Kind   uint32 // abi.EventStdout or abi.EventStderr
	Data   []byte
}

// Env is the state host functions act on during one call. Build a fresh Env
// for every call (SRD FR-REG-04a).
type Env struct {
	CallID  string
	Sandbox *sandbox.Sandbox
	// Reads is the conversation's read cache. Nil disables recording, so
	// every overwrite of an existing file is refused as stale.
	Reads  *readcache.Cache
	Limits abi.Limits
	// Emit receives streamed output; nil drops it.
	Emit func(Event)
	// Resolved holds paths the engine already resolved during preflight,
	// keyed by the string the plugin was given.
	Resolved map[string]sandbox.Path
	// Pure refuses every host function: set while computing a summary.
	Pure bool
	// Environ is the environment of processes the call starts, already
	// sanitized (CFG-ENV-01); nil starts them with an empty environment.
	Environ []string
	// Now is the clock for read-cache entries; nil means time.Now.
	Now func() time.Time

	staged []byte
}

type envKey struct{}

// WithEnv returns a context carrying env for the host functions of a call.
func WithEnv(ctx context.Context, env *Env) context.Context {
	return context.WithValue(ctx, envKey{}, env)
}

func envFrom(ctx context.Context) *Env {
	env, _ := ctx.Value(envKey{}).(*Env)
	return env
}

func (e *Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Env) resolve(path string) (sandbox.Path, error) {
	if p, ok := e.Resolved[path]; ok {
		return p, nil
	}
	return e.Sandbox.Resolve(path)
}

// display is how a path appears in results: relative to the working
// directory when inside it, absolute otherwise.
func (e *Env) display(p sandbox.Path) string {
	roots := e.Sandbox.Roots()
	if len(roots) > 0 && p.RootDir == roots[0] {
		return p.Rel
	}
	return p.Abs
}

// Package runtime runs toolhost plugins: one wazero runtime, each module
// compiled once (through an on-disk compilation cache), warm instance pools,
// a memory limit per instance, and prompt interruption of a runaway guest.
//
// # Listing tools without compiling
//
// Compiling a Go-built plugin costs 1.0–1.5 s cold and 50–80 ms from the
// cache, so Load never compiles: it reads the manifest from the module's
// "toolhost.manifest" custom section (written by Pack at build time), or from
// a manifest cache keyed by the module's SHA-256, and compiles on first use
// (or when the server calls Warm).
//
// # Stopping a runaway guest
//
// wazero offers WithCloseOnContextDone, which exits to Go at every loop
// iteration. Measured here (2 vCPU, Go 1.26, wazero 1.12) on a Go-compiled
// guest: a trivial call costs 51 ns without it and 680 ns with it, and
// decoding three JSON fields with encoding/json inside the guest costs 12 µs
// without it and 57 µs with it — over the whole 50 µs budget of a warm
// read_file. Worker processes would add IPC to every call. So toolhost
// instruments the module instead (package loopguard): at load time every
// loop header gets a check of an exported i32 global, and when a call's
// context ends a context.AfterFunc sets that global; the guest traps at its
// next loop iteration, within about a millisecond, and the instance is
// discarded. Host functions watch the same context themselves. The
// interpreter (Config.Interpreter, and Pack) checks the context itself
// instead, since it reads globals without synchronisation.
//
// # Start-up is bounded like a call
//
// A plugin's start-up — its _initialize (for a Go plugin, the Go runtime
// and every init function) and describe — runs under
// Config.StartupTimeout (and the caller's deadline) with the same
// interrupt. Instances are created without wazero running start
// functions, because the flag can be set only once instantiation has
// returned; _initialize then runs as an export. Measured on a Go plugin,
// start-up costs the same either way (7–8 ms), and it is off the hot path:
// instances are pooled.
//
// # Lifetime
//
// Plugin.Close releases a plugin's warm instances, compiled module and
// host module, waiting for no call: calls in flight finish, their
// instances are closed instead of pooled, and the compiled module goes
// with the last of them. Runtime.Close closes every plugin it loaded, both
// engines and the compilation cache, whose engines hold the compiled code.
//
// # A call's state
//
// Host functions act on state their caller builds for each call: the
// runtime carries it from Plugin.Call to them without looking inside.
// Runtime, Plugin, Config and HostFunction are generic over its type S,
// so it crosses the runtime typed: package hostfn, which imports runtime,
// instantiates them with hostfn.Env, and runtime never imports hostfn or
// asserts a type. A nil state (and a summary's or a start-up's, which
// have none) makes every host function refuse.
//
// # Traps
//
// A trap, a guest panic or proc_exit becomes a *TrapError ("Tool panicked: …"
// in results, SRD FR-EXE-04b) and the instance is discarded; the plugin's
// other instances and the runtime stay usable.
package runtime

// Package hostfn implements the toolhost/v1 host functions: the only doors
// through which a plugin reaches files, processes or the event stream.
//
// Every function applies the call's sandbox to the paths it is given, and
// does byte-level work (UTF-8 and NUL sniffing, line splitting, hashing,
// base64, diffs) natively, because the same loops run 10–50× slower inside
// a Go-compiled guest. The runtime links a plugin only the functions its
// manifest's capabilities grant (Functions), and passes no Env while a
// summary is computed, so every function refuses then.
//
// hostfn never touches a path the sandbox did not resolve, and never writes
// an existing file that the conversation did not read or that changed since.
//
// # Adding a host function
//
// A call's state (Env) comes in one part per capability, and a host
// function sees only the parts it needs, so to add one you learn three
// things:
//
//   - its part's state: Call (env.go), which every function gets: the
//     call's id, sandbox, limits, dry run, event stream, journal and
//     observer; plus Files for a function that records what it read or
//     writes (stale-file protection, write grants), or Commands for one
//     that runs processes (confinement, environment). A capability with
//     state of its own gets a part of its own, beside these.
//   - the ABI record codecs in package abi: the function's name and
//     capability (abi.CapabilityFunctions), and the Append*/Decode*
//     functions of the records it takes and returns, as abi/README.md
//     documents them.
//   - how link.go registers it: one line in functions() with its wasm
//     parameter types, wrapped by onCall, onFiles or onCommands, which
//     hand it its parts. It returns the response bytes or an error; link.go
//     turns the error into the ABI's status and HostError, reports the
//     call to the observer, and the runtime stages the response.
package hostfn

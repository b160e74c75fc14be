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
package hostfn

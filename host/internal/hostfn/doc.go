// Package hostfn implements the toolhost/v1 host functions: the only doors
// through which a plugin reaches files, processes or the event stream.
//
// Every function applies the call's sandbox to the paths it is given, and
// does byte-level work (UTF-8 and NUL sniffing, line splitting, hashing,
// base64, diffs) natively, because the same loops run 10–50× slower inside
// a Go-compiled guest. A plugin gets a host module holding only the
// functions its manifest's capabilities grant (Link); during a summary call
// (Env.Pure) every function refuses.
//
// hostfn never touches a path the sandbox did not resolve, and never writes
// an existing file that the conversation did not read or that changed since.
package hostfn

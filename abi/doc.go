// Package abi defines toolhost/v1, the contract between the toolhost host
// and its WebAssembly tool plugins: export and import names, capability
// names, the plugin manifest, the request and result envelopes, host status
// codes and error kinds.
//
// The package holds types, constants and the two envelope codecs, and nothing
// else: it imports only the standard library and is compiled into both the
// host and every plugin. README.md in this directory is the normative
// description of the wire format, written so that a plugin can be built in
// any language from it alone.
package abi

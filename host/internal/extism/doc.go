// Package extism serves the tools of modules written for an Extism MCP host
// (hyper-mcp's list_tools / call_tool plugins, and the older mcp.run
// servlets' describe / call) under toolhost's policy: each tool such a
// module describes becomes one registry tool, approved, timed out, capped
// and journaled by the engine like a native one.
//
// A module is untrusted even in the trusted plugin directory, so this
// package gives it less than its own host would: no files (WASI without
// preopens, environment or arguments; its stdout and stderr go nowhere),
// network only through Extism HTTP to the hosts toolhost's configuration
// allow-lists for it (every request, redirects included, re-checked by
// Guard, on a transport of its own; an internal address — loopback,
// private, link-local, unspecified — only when an entry names that very
// address or localhost, checked when connecting, so neither a pattern nor
// a name resolving there reaches one), config values only from toolhost's
// configuration, memory capped,
// each call under the engine's deadline on an instance used by one call at
// a time and replaced after a timeout or a trap. Host functions beyond
// progress, log and list-changed notifications are refused when the module
// loads, naming each.
//
// A plugin's grant is its [extism.<name>] table in toolhost's
// configuration, name being the module's file stem or, for a module alone
// in a folder (DIR/<name>/plugin.wasm), the folder's name. Files beside
// the module in its folder (an Extism manifest.json, a hyper-mcp config)
// are never read: hosts, config values and memory come from toolhost's
// configuration only, so nothing shipped with a plugin widens its grant.
//
// Progress and log notifications reach the call's consumer as stderr
// chunk events ("progress 2/5: message", "[info logger] data"), the stream
// the engine already sanitizes and passes to MCP clients and consoles.
package extism

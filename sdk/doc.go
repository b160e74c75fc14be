// Package sdk is what a toolhost plugin imports. A plugin declares one tool —
// its manifest, an argument struct and a handler — and the SDK provides the
// toolhost/v1 exports, decodes the arguments once into the typed struct (the
// single parse boundary, SRD FR-REG-02), and wraps the host functions that
// are the plugin's only way to touch files or processes.
//
// A plugin's main package registers its tool from an init function:
//
//	func init() { sdk.Register(tool) }
//	func main() {}
//
// This is the one place toolhost code uses init: a WASI reactor never runs
// main, so package initialisation (run by _initialize) is the only moment
// before the host calls an export.
//
// The package builds for GOOS=wasip1 GOARCH=wasm. On other platforms it
// compiles, so that plugins can be vetted natively, but every host function
// fails with StatusNotGranted.
package sdk

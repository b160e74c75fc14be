// Command badimport is a hyper-mcp plugin importing host functions toolhost
// does not provide (sampling and the client's roots): the host must refuse
// it at load, naming both.
package main

import pdk "github.com/extism/go-pdk"

//go:wasmimport extism:host/user create_message
func createMessage(uint64) uint64

//go:wasmimport extism:host/user list_roots
func listRoots() uint64

//go:wasmexport list_tools
func listTools() int32 {
	pdk.OutputString(`{"tools":[{"name":"sample","description":"asks the client's model","inputSchema":{"type":"object"}}]}`)
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	createMessage(listRoots())
	return 0
}

func main() {}

package extism

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

// kernelFunctions are the functions go-sdk's extism:host/env provides: the
// kernel (memory, input, output, errors), config and variables, HTTP
// (checked by Guard) and logs.
var kernelFunctions = []string{
	"alloc", "free", "load_u8", "load_u64", "input_load_u8", "input_load_u64", "store_u8", "store_u64",
	"input_set", "output_set", "input_length", "input_offset", "output_length", "output_offset",
	"length", "length_unsafe", "reset", "error_set", "error_get", "memory_bytes",
	"config_get", "var_get", "var_set", "http_request", "http_status_code", "http_headers", "get_log_level",
	"log_trace", "log_debug", "log_info", "log_warn", "log_error",
}

// ImportError reports a module importing what toolhost does not provide:
// every such import, so the author learns them all at once.
type ImportError struct {
	Plugin  string   // the module's file
	Imports []string // "module.name", sorted
}

func (e *ImportError) Error() string {
	return fmt.Sprintf("plugin %s imports %s, which toolhost does not provide; an Extism plugin may import only %s, %s and, from %s, %s: rebuild it without the others",
		e.Plugin, strings.Join(e.Imports, ", "), envModule, wasiModule, userModule, strings.Join(userFunctionNames(), ", "))
}

// checkImports refuses, before anything is compiled, a module importing a
// host function toolhost does not provide (hyper-mcp's sampling,
// elicitation, roots, tokens and keyring secrets among them), or anything
// but a function.
func checkImports(path string, imports []wasmbin.Import) error {
	var refused []string
	for _, imp := range imports {
		if !provided(imp) {
			refused = append(refused, imp.Module+"."+imp.Name)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	slices.Sort(refused)
	return &ImportError{Plugin: path, Imports: slices.Compact(refused)}
}

func provided(imp wasmbin.Import) bool {
	if imp.Kind != wasmbin.KindFunc {
		return false
	}
	switch imp.Module {
	case wasiModule:
		return true // no preopens, environment or arguments: see instanceConfig
	case envModule:
		return slices.Contains(kernelFunctions, imp.Name)
	case userModule:
		return slices.Contains(userFunctionNames(), imp.Name)
	}
	return false
}

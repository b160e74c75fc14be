package extism

import (
	"fmt"
	"io"
	"os"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

// Kind is the protocol an Extism MCP module speaks.
type Kind string

// Kinds of module. NotExtism is every other module: a native toolhost
// plugin, or something the native runtime will refuse with its own reason.
const (
	NotExtism Kind = ""
	// HyperMCP is hyper-mcp's current protocol: list_tools and call_tool.
	HyperMCP Kind = "hyper-mcp"
	// Servlet is the older mcp.run servlet protocol: describe and call.
	Servlet Kind = "mcp.run-servlet"
)

// Namespaces of the imports an Extism module may have.
const (
	envModule  = "extism:host/env"
	userModule = "extism:host/user"
	wasiModule = "wasi_snapshot_preview1"
)

// shape is what detection reads of a module: its exports' names and its
// imports.
type shape struct {
	exports map[string]bool
	imports []wasmbin.Import
}

// Detect tells which protocol the module at path speaks, reading only its
// section headers, its import section and its export section: a native
// module is still loaded without being compiled. A module exporting
// list_tools and call_tool is hyper-mcp's; one exporting describe and call
// is a servlet only if it imports Extism's kernel and lacks toolhost's
// version marker (native plugins export describe and call too). Like
// hyper-mcp, a module exporting both pairs is taken for a servlet.
func Detect(path string) (Kind, error) {
	s, err := readShape(path)
	if err != nil {
		return NotExtism, err
	}
	return s.kind(), nil
}

func (s shape) kind() Kind {
	if s.exports[abi.ExportVersionMarker] {
		return NotExtism
	}
	extismImports := false
	for _, imp := range s.imports {
		if imp.Module == envModule || imp.Module == userModule {
			extismImports = true
		}
	}
	switch {
	case s.exports["describe"] && s.exports["call"] && extismImports:
		return Servlet
	case s.exports["list_tools"] && s.exports["call_tool"]:
		return HyperMCP
	}
	return NotExtism
}

func readShape(path string) (shape, error) {
	f, err := os.Open(path)
	if err != nil {
		return shape{}, fmt.Errorf("plugin %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return shape{}, fmt.Errorf("plugin %s: %w", path, err)
	}
	return shapeOf(path, f, st.Size())
}

// shapeOf reads the shape of the module in r (size bytes), named path in
// errors.
func shapeOf(path string, r io.ReaderAt, size int64) (shape, error) {
	headers, err := wasmbin.ScanFile(r, size)
	if err != nil {
		return shape{}, fmt.Errorf("plugin %s: %w", path, err)
	}
	s := shape{exports: map[string]bool{}}
	for _, h := range headers {
		switch h.ID {
		case wasmbin.SectionImport:
			if s.imports, err = readImports(r, h); err != nil {
				return shape{}, fmt.Errorf("plugin %s: %w", path, err)
			}
		case wasmbin.SectionExport:
			if err := readExports(r, h, s.exports); err != nil {
				return shape{}, fmt.Errorf("plugin %s: %w", path, err)
			}
		}
	}
	return s, nil
}

func readImports(f io.ReaderAt, h wasmbin.SectionHeader) ([]wasmbin.Import, error) {
	body, err := h.Read(f)
	if err != nil {
		return nil, err
	}
	return wasmbin.Imports(wasmbin.Section{ID: h.ID, Offset: int(h.Offset), Body: body})
}

// readExports adds the name of every export to names.
func readExports(f io.ReaderAt, h wasmbin.SectionHeader, names map[string]bool) error {
	body, err := h.Read(f)
	if err != nil {
		return err
	}
	exports, err := wasmbin.Exports(wasmbin.Section{ID: h.ID, Offset: int(h.Offset), Body: body})
	for _, e := range exports {
		names[e.Name] = true
	}
	return err
}

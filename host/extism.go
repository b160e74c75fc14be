package host

import (
	"context"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/extism"
	"github.com/toolhost/toolhost/host/internal/registry"
)

// extismModules is the registry's loader of Extism MCP modules: the one
// place that ties the registry to the extism package, so the registry
// knows no ABI but its own.
type extismModules struct{ l *extism.Loader }

// Load lists the tools of the module at path when it is an Extism one.
func (e extismModules) Load(ctx context.Context, path, dir string) ([]registry.ForeignTool, bool, error) {
	kind, err := extism.Detect(path)
	if err != nil || kind == extism.NotExtism {
		// A module it cannot read goes to the native loader, which
		// checks the lock before parsing and names what is wrong.
		return nil, false, nil
	}
	tools, err := e.l.Load(ctx, path, extism.PluginName(path, dir), kind)
	if err != nil {
		return nil, true, err
	}
	out := make([]registry.ForeignTool, len(tools))
	for i, t := range tools {
		out[i] = t
	}
	return out, true, nil
}

// extismGrants converts the configuration's [extism.<name>] tables.
func extismGrants(plugins map[string]config.ExtismPlugin) map[string]extism.Grant {
	out := make(map[string]extism.Grant, len(plugins))
	for name, p := range plugins {
		out[name] = extism.Grant{AllowedHosts: p.AllowedHosts, Config: p.Config, MaxMemoryMiB: p.MaxMemoryMiB}
	}
	return out
}

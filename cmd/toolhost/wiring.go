package main

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/toolhost/toolhost/host/registry"
	"github.com/toolhost/toolhost/host/runtime"
)

// loadRegistry starts a runtime and reads the plugin directory's manifests
// (no compilation). The caller closes the runtime.
func loadRegistry(ctx context.Context, g *globals, log *slog.Logger) (*runtime.Runtime, *registry.Registry, error) {
	dir, err := g.pluginDir()
	if err != nil {
		return nil, nil, err
	}
	rt, err := runtime.New(ctx, runtime.Config{CacheDir: g.cache(), Logger: log})
	if err != nil {
		return nil, nil, err
	}
	reg, err := registry.Load(ctx, rt, dir)
	if err != nil {
		rt.Close(ctx)
		abs, _ := filepath.Abs(dir)
		return nil, nil, usageErrorf("%v (plugin directory %s)", err, abs)
	}
	return rt, reg, nil
}

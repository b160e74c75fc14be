package main

import (
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/sandbox"
)

// settings are the configuration in the shapes the host packages take.
type settings struct {
	sandbox sandbox.Config
	engine  engine.Config
}

func defaultSettings() settings {
	return settings{
		sandbox: sandbox.Config{Roots: []string{"."}, IncludeDefaultDenies: true, ReadOnlyPatterns: []string{".git/**"}},
		engine:  engine.Config{Policy: engine.DefaultPolicy()},
	}
}

func (g *globals) settings() (settings, error) {
	return defaultSettings(), nil
}

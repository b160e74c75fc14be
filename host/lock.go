package host

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/toolhost/toolhost/host/internal/pin"
	"github.com/toolhost/toolhost/host/internal/registry"
)

// LockFile is the name of a plugin directory's lock: the SHA-256 of each
// plugin module the operator trusts. When it exists, a Host refuses any
// module it does not list, or whose bytes hash otherwise.
const LockFile = pin.FileName

// LockedPlugin is one module a lock pins.
type LockedPlugin struct {
	// Path is the module relative to the plugin directory,
	// slash-separated: "read_file.wasm", "hyper/plugin.wasm".
	Path   string
	SHA256 string
}

// Lock writes pluginDir's lock, pinning every plugin module in it as it is
// now — each *.wasm in the directory and in its immediate subdirectories
// (where a plugin keeps its manifest and configuration beside its module)
// — and returns what it pinned, sorted by path. Review the modules first:
// the lock vouches for them.
func Lock(pluginDir string) ([]LockedPlugin, error) {
	found, err := hashModules(pluginDir)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("plugin directory %s holds no *.wasm plugins to lock; build them or pass --plugins", pluginDir)
	}
	entries := make([]pin.Entry, len(found))
	for i, p := range found {
		entries[i] = pin.Entry{Path: p.Path, SHA256: p.SHA256}
	}
	if err := pin.Write(filepath.Join(pluginDir, LockFile), entries); err != nil {
		return nil, err
	}
	return found, nil
}

// CheckLock compares pluginDir's modules with its lock, writing nothing,
// and returns one problem per module changed or not listed (what a Host
// would refuse) and per module listed but gone (the lock is stale). A
// directory without a lock, or with a malformed one, is an error.
func CheckLock(pluginDir string) (problems []error, err error) {
	file := filepath.Join(pluginDir, LockFile)
	lock, err := pin.Read(file)
	if err != nil {
		return nil, err
	}
	if lock == nil {
		return nil, fmt.Errorf("no %s in %s; review the plugins and run toolhost lock to write one", LockFile, pluginDir)
	}
	found, err := modules(pluginDir)
	if err != nil {
		return nil, err
	}
	for _, rel := range found {
		data, err := os.ReadFile(filepath.Join(pluginDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", rel, err)
		}
		if err := lock.Check(rel, data); err != nil {
			problems = append(problems, err)
		}
	}
	for _, e := range lock.Entries() {
		if !slices.Contains(found, e.Path) {
			problems = append(problems, fmt.Errorf("plugin %s is listed in %s but is not in the plugin directory; run toolhost lock to drop it, or restore the file", e.Path, file))
		}
	}
	return problems, nil
}

// lockVerifier returns what vets each module a Host loads and compiles
// against pluginDir's lock (runtime.Config.Verify), or nil when pluginDir
// has no lock. Every loader of modules from pluginDir — native or not —
// must call it on the very bytes it compiles.
func lockVerifier(pluginDir string) (func(path string, data []byte) error, error) {
	lock, err := pin.Read(filepath.Join(pluginDir, LockFile))
	if err != nil || lock == nil {
		return nil, err
	}
	return func(path string, data []byte) error {
		rel, err := filepath.Rel(pluginDir, path)
		if err != nil {
			rel = path // not listed, so refused, naming what was loaded
		}
		return lock.Check(filepath.ToSlash(rel), data)
	}, nil
}

// hashModules hashes every module in pluginDir.
func hashModules(pluginDir string) ([]LockedPlugin, error) {
	found, err := modules(pluginDir)
	if err != nil {
		return nil, err
	}
	out := make([]LockedPlugin, len(found))
	for i, rel := range found {
		data, err := os.ReadFile(filepath.Join(pluginDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", rel, err)
		}
		out[i] = LockedPlugin{Path: rel, SHA256: pin.Sum(data)}
	}
	return out, nil
}

// modules lists, slash-separated relative to pluginDir, the modules a
// Host loads from it: the registry's own list, so the lock pins exactly
// what is served.
func modules(pluginDir string) ([]string, error) {
	found, err := registry.Modules(pluginDir)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(found))
	for i, m := range found {
		rel, err := filepath.Rel(pluginDir, m.Path)
		if err != nil {
			return nil, err
		}
		out[i] = filepath.ToSlash(rel)
	}
	return out, nil
}

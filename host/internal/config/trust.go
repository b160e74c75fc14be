package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/pelletier/go-toml/v2"
)

// TrustFile is the name of the file in the user's configuration directory
// that lists the project directories whose configuration file may narrow
// the operator's policy. It lives beside the operator's
// own configuration so that the same protection covers both: no tool can
// read or write the user configuration directory.
const TrustFile = "trust.toml"

// trustDoc is the trust file's content.
type trustDoc struct {
	Directories []string `toml:"directories"`
}

const trustHeader = `# Directories whose toolhost.toml (or .yaml, .yml) may narrow the
# operator's configuration; a file in any other directory is ignored.
# Written by "toolhost trust"; one canonical absolute path each.
`

// Trusted lists the directories trusted in userDir's trust file, sorted;
// none when userDir is "" or the file does not exist.
func Trusted(userDir string) ([]string, error) {
	if userDir == "" {
		return nil, nil
	}
	file := filepath.Join(userDir, TrustFile)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trust file: %w", err)
	}
	var doc trustDoc
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("trust file %s: %w (fix it, or remove it and run \"toolhost trust DIR\" again)", file, err)
	}
	slices.Sort(doc.Directories)
	return slices.Compact(doc.Directories), nil
}

// Trust records dir, made canonical, as trusted in userDir's trust file,
// creating the directory (0700) and the file (0600) if needed. It returns
// the canonical path recorded.
func Trust(userDir, dir string) (string, error) {
	canon, err := canonicalDir(dir)
	if err != nil {
		return "", err
	}
	dirs, err := Trusted(userDir)
	if err != nil {
		return "", err
	}
	if !slices.Contains(dirs, canon) {
		dirs = append(dirs, canon)
	}
	return canon, writeTrust(userDir, dirs)
}

// Untrust removes dir from userDir's trust file. It reports whether dir
// was trusted; dir need not exist any more.
func Untrust(userDir, dir string) (string, bool, error) {
	canon, err := canonicalDir(dir)
	if err != nil {
		// A removed directory can still be forgotten by its absolute path.
		if canon, err = filepath.Abs(dir); err != nil {
			return "", false, err
		}
	}
	dirs, err := Trusted(userDir)
	if err != nil {
		return "", false, err
	}
	i := slices.Index(dirs, canon)
	if i < 0 {
		return canon, false, nil
	}
	return canon, true, writeTrust(userDir, slices.Delete(dirs, i, i+1))
}

// IsTrusted reports whether dir, made canonical, is in userDir's trust
// file.
func IsTrusted(userDir, dir string) (bool, error) {
	canon, err := canonicalDir(dir)
	if err != nil {
		return false, err
	}
	dirs, err := Trusted(userDir)
	return slices.Contains(dirs, canon), err
}

// canonicalDir is dir absolute with every symbolic link resolved, so that
// a link made later cannot stand in for a trusted directory.
func canonicalDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	canon, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("directory %s: %w", dir, err)
	}
	if fi, err := os.Stat(canon); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return canon, nil
}

// writeTrust replaces the trust file atomically: a crash leaves the old
// list or the new one, never half of either.
func writeTrust(userDir string, dirs []string) error {
	if userDir == "" {
		return errors.New("no user configuration directory (set $XDG_CONFIG_HOME or $HOME)")
	}
	if err := os.MkdirAll(userDir, 0o700); err != nil {
		return fmt.Errorf("user configuration directory: %w", err)
	}
	slices.Sort(dirs)
	body, err := toml.Marshal(trustDoc{Directories: dirs})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(userDir, ".trust-*.toml")
	if err != nil {
		return fmt.Errorf("trust file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(trustHeader + string(body))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(userDir, TrustFile))
	}
	if err != nil {
		return fmt.Errorf("trust file: %w", err)
	}
	return nil
}

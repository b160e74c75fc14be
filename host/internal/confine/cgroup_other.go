//go:build !linux

package confine

import (
	"errors"
	"runtime"
)

// Cgroup is one command's control group; outside Linux there is none.
type Cgroup struct{}

// NewCgroup fails outside Linux.
func NewCgroup(name string, l Limits) (*Cgroup, error) {
	return nil, errors.New("cgroups need Linux; this is " + runtime.GOOS)
}

// Add does nothing: there is no cgroup.
func (c *Cgroup) Add(pid int) error { return nil }

// Controllers names none.
func (c *Cgroup) Controllers() []string { return nil }

// OOMKilled reports false.
func (c *Cgroup) OOMKilled() bool { return false }

// PidsMaxHit reports false.
func (c *Cgroup) PidsMaxHit() bool { return false }

// Close does nothing.
func (c *Cgroup) Close() error { return nil }

func newCgroupIn(name string, l Limits, v2dir string) (*Cgroup, error) { return NewCgroup(name, l) }

func presetCgroup(dir string, l Limits) *Cgroup { return nil }

//go:build linux

package confine

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// BenchmarkLaunchCost breaks a confined start down into its parts, to
// show where the time goes (run with -benchtime 50x):
//
//   - clone_ns/heap=N: starting /bin/true in the launcher's namespaces
//     from a process holding N MB of heap. Go cannot use vfork with
//     CLONE_NEWUSER, so it forks, copying the page tables: the cost
//     grows with the host's size, against clone_plain's vfork.
//   - exec_init: executing this binary up to the launcher's first check
//     (which fails at once, without its descriptors): the runtime's and
//     every package initializer's start-up, paid by each launcher.
//   - launcher_work: from the policy handed over to the launcher's
//     "confined" report, the launcher already initialized (started
//     beforehand): the root's mounts, limits, Landlock, seccomp and the
//     shell's fork.
func BenchmarkLaunchCost(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("clone_plain", func(b *testing.B) {
		for b.Loop() {
			costRun(b, exec.Command("/bin/true"), false)
		}
	})
	var heap [][]byte
	for _, mb := range []int{0, 200} {
		for len(heap) < mb {
			p := make([]byte, 1<<20)
			for i := range p {
				p[i] = 1 // touched, so that it is mapped
			}
			heap = append(heap, p)
		}
		b.Run("clone_ns/heap="+map[int]string{0: "0MB", 200: "200MB"}[mb], func(b *testing.B) {
			for b.Loop() {
				costRun(b, exec.Command("/bin/true"), true)
			}
		})
	}
	runtime.KeepAlive(heap)
	heap = nil
	runtime.GC()
	b.Run("exec_init", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(exe, spec.LauncherArg)
			if err := cmd.Run(); err == nil {
				b.Fatal("the launcher without its descriptors did not fail")
			}
		}
	})
	work := canonicalTempDir(b)
	p := testPolicy(b, work)
	b.Run("launcher_work", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			l := NewLaunch(p, exe, nil)
			cmd := exec.Command("/bin/sh", "-c", "true")
			cmd.Dir = p.Dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := l.Prepare(cmd); err != nil {
				b.Fatal(err)
			}
			runtime.LockOSThread()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			time.Sleep(30 * time.Millisecond) // past the launcher's start-up
			b.StartTimer()
			err := l.Started(context.Background(), cmd.Process.Pid)
			b.StopTimer()
			cmd.Wait()
			runtime.UnlockOSThread()
			l.Close()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}

// costRun runs cmd to its end, in the launcher's namespaces when ns.
func costRun(b *testing.B, cmd *exec.Cmd, ns bool) {
	if ns {
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
				syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWNET,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		}
	}
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
}

package spec

// How the host and the launcher talk: the host re-executes the toolhost
// binary with LauncherArg, writes a LaunchMsg on the policy pipe and
// reads status lines back until the launcher exits.

// LauncherArg is the hidden first argument that makes the toolhost binary
// the launcher instead of its CLI.
const LauncherArg = "__toolhost-confine"

// The launcher's descriptors, handed over by the host (ExtraFiles).
const (
	PolicyFD = 3 // the host writes a LaunchMsg, then closes
	StatusFD = 4 // the launcher writes StatusConfined or StatusError, then how the shell ended
	CgroupFD = 5 // the first of LaunchMsg.CgroupTasks v1 cgroup tasks files
)

// MaxCgroupTasks bounds LaunchMsg.CgroupTasks: one per v1 hierarchy used
// (memory, pids).
const MaxCgroupTasks = 4

// MaxLaunchMsg bounds what the launcher reads from the policy pipe.
const MaxLaunchMsg = 16 << 20

// LaunchMsg is what the host writes on the launcher's policy pipe. The
// command travels here rather than as an argument: an argument is limited
// to 128 KiB, and a command may be that long.
type LaunchMsg struct {
	Policy  Policy `json:"policy"`
	Command string `json:"command"`
	// CgroupTasks is how many v1 cgroup tasks files the launcher holds,
	// from CgroupFD on: it moves its thread into each before it forks the
	// shell.
	CgroupTasks int `json:"cgroup_tasks,omitempty"`
}

// The lines the launcher writes on the status pipe, each ended by a
// newline.
const (
	StatusConfined = "confined " // + Applied as JSON
	StatusError    = "error: "   // + why the command did not run
	StatusExit     = "exit "     // + the shell's exit status
	StatusSignal   = "signal "   // + the number of the signal that killed the shell
)

// ExitLaunchFailed is the launcher's exit status when the command did not
// run, as env(1) and chroot(1) use it.
const ExitLaunchFailed = 125

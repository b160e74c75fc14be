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

// Warm launchers cut a confined command's start to the launcher's own
// work: a small process of the toolhost binary (the launcher server,
// started once per host with LaunchersArg) starts launchers ahead of
// need with WarmLauncherArg, already in their namespaces and past the
// binary's start-up, and each waits on a socket for one command. The
// server's pages are few, so its clone is cheap where the host's (a
// large process) is not.
const (
	// LaunchersArg makes the binary the launcher server: it reads
	// LaunchersRequests on LaunchersFD and answers each with a
	// LaunchersReply and, on success, two descriptors: the host's end of
	// the new launcher's socket and a pidfd of the launcher.
	LaunchersArg = "__toolhost-launchers"
	// WarmLauncherArg makes the binary a warm launcher: it reads one
	// WarmMsg on WarmFD, with the descriptors it names, then goes on as a
	// launcher started with LauncherArg.
	WarmLauncherArg = "__toolhost-confine-warm"
)

// The descriptors of the launcher server and of a warm launcher: each is
// a SOCK_SEQPACKET socket, so a message arrives whole or not at all.
const (
	LaunchersFD = 3
	WarmFD      = 3
)

// WarmReady is what a warm launcher sends first, once past its
// start-up, with its mount namespace's descriptor when it can open it:
// the host offers only launchers that sent it, and holds the namespace
// until the launcher has exited.
const WarmReady = "ready"

// WarmTaken is a warm launcher's answer to its WarmMsg, once it holds
// the message and its descriptors: a launcher that dies before it (its
// server killed, say) never ran the command, which then takes the cold
// path.
const WarmTaken = "taken"

// WarmPremounted is a warm launcher's answer to a WarmMsg with Premount,
// once it has mounted what it could of it: the host offers the launcher
// to a command only then.
const WarmPremounted = "premounted"

// MaxWarmMsg bounds a WarmMsg: it travels as one datagram, which a
// socket's default buffer holds. A larger policy (many nested
// repositories) takes the launcher started for the call alone.
const MaxWarmMsg = 192 << 10

// LaunchersRequest asks the launcher server for one warm launcher.
type LaunchersRequest struct {
	// NewNetwork starts it in a network namespace of its own (every
	// network mode but On).
	NewNetwork bool `json:"new_network"`
	// Cgroup says a cgroup v2 directory comes with the request: the
	// launcher is cloned into it, and the command it runs takes it over.
	Cgroup bool `json:"cgroup,omitempty"`
	// Fingerprint and Revision are the host's: the server refuses every
	// request of another build (SameBuild).
	Fingerprint string `json:"fingerprint"`
	Revision    string `json:"revision,omitempty"`
}

// LaunchersReply answers a LaunchersRequest: the launcher's pid, or why
// none was started.
type LaunchersReply struct {
	Pid   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
}

// WarmMsg hands a warm launcher its command: a LaunchMsg. Its
// descriptors arrive with it, in this order: the command's stdout and
// stderr, the status pipe, then LaunchMsg.CgroupTasks v1 tasks files. The
// launcher is in the command's cgroup v2 directory already, if it has
// one (LaunchersRequest.Cgroup).
//
// One WarmMsg with Premount set, no command and no descriptors may come
// first: the mounts the host expects its command's policy to begin
// with. The launcher makes them while it waits, and keeps those the
// command's policy does begin with, of the same files; otherwise it
// makes the command's root again.
type WarmMsg struct {
	LaunchMsg
	Premount bool `json:"premount,omitempty"`
}

// WarmFiles is how many descriptors come with a WarmMsg before the
// cgroup's.
const WarmFiles = 3

// Package launcher is the launcher half of run_command's confinement: the
// code that runs inside the toolhost binary re-executed with
// spec.LauncherArg (Main), in the new namespaces the host started it in.
// It reads the policy the host wrote, builds the command's root (mounts),
// brings up the namespace's loopback and the allowlist relay, sets
// resource limits, no_new_privs, Landlock and seccomp, drops its
// capabilities, and runs sh -c as the PID namespace's init.
//
// It knows the host only through package spec: it never imports the host
// side (package confine), and keeps its imports to what a launcher needs,
// so the re-executed binary does no more than confine and start the
// command.
package launcher

#!/bin/sh
# gen.sh writes the stderr samples Hint is tested on:
# real tools, run unconfined, refused for real. Run as root on Linux
# with unshare(1) and setpriv(1), from this directory:
#
#	sh gen.sh
#
# "Read-only file system" (EROFS): /etc is bound read-only onto itself in
# a private user and mount namespace (unshare -rm), which is what the
# confined root does to every read-only path. "Permission denied"
# (EACCES, what Landlock answers) and "Operation not permitted" (EPERM):
# the tools run as nobody (setpriv), writing to root's /etc. Network:
# a new network namespace with nothing in it (unshare -rn), like
# network = "off". Each sample is the tool's stderr only, as run_command
# returns it. LC_ALL=C.UTF-8 gives the curly quotes GNU tools print in a
# UTF-8 locale; the *-c samples use LC_ALL=C and plain quotes.
set -u
out=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/proj" && git -C "$work/proj" init -q && mkdir -p "$work/proj/.git/hooks"
export LC_ALL=C.UTF-8

ro() { # name, command: run with /etc and the project's .git/hooks read-only
	unshare -rm sh -c "mount --bind /etc /etc && mount -o remount,bind,ro /etc &&
		mount --bind '$work/proj/.git/hooks' '$work/proj/.git/hooks' &&
		mount -o remount,bind,ro '$work/proj/.git/hooks' && cd '$work/proj' && $2" 2>"$out/$1.stderr" >/dev/null
}
nobody() { # name, command: run as nobody
	(cd "$work" && setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "$2") 2>"$out/$1.stderr" >/dev/null
}
nonet() { # name, command: run in an empty network namespace
	unshare -rn sh -c "$2" 2>"$out/$1.stderr" >/dev/null
}

ro erofs-dash 'echo x > /etc/x'
ro erofs-bash 'bash -c "echo x > /etc/x"'
ro erofs-touch 'touch /etc/x'
ro erofs-touch-c 'LC_ALL=C touch /etc/x'
ro erofs-mkdir 'mkdir /etc/x'
ro erofs-cp 'cp /etc/hostname /etc/x'
ro erofs-mv 'echo x > /tmp/e14-mv && mv /tmp/e14-mv /etc/x; rm -f /tmp/e14-mv'
ro erofs-rm 'rm -f /etc/hostname'
ro erofs-python 'python3 -c "open(\"/etc/x\", \"w\")"'
ro erofs-node 'node -e "require(\"fs\").writeFileSync(\"/etc/x\", \"x\")"'
ro erofs-go 'GOCACHE=/etc/gocache go env GOCACHE >/dev/null && GOCACHE=/etc/gocache go build std'
ro erofs-git-hook 'echo "exit 0" > .git/hooks/pre-commit'
ro erofs-curl 'curl -sS -o /etc/x file:///etc/hostname'
nobody eacces-dash 'echo x > /etc/x'
nobody eacces-touch 'touch /etc/x'
nobody eacces-mkdir 'mkdir /etc/x'
nobody eacces-python 'python3 -c "open(\"/etc/x\", \"w\")"'
nobody eacces-git 'git init -q /etc/x'
nobody eacces-ls 'ls /lost+found'
nobody eacces-cat 'cat /etc/shadow'
nobody eperm-chmod 'chmod 777 /etc/hostname'
nobody eperm-touch-date 'touch -d 2000-01-01 /etc/hostname'
nonet net-curl-dns 'curl -sS http://example.com/'
nonet net-curl-ip 'curl -sS http://192.0.2.1/'
nonet net-python-dns 'python3 -c "import urllib.request; urllib.request.urlopen(\"http://example.com/\")" 2>&1 >/dev/null | tail -n 1 >&2'
nonet net-git 'git ls-remote https://example.com/x.git'
nonet net-go-proxyoff "cd '$work' && mkdir -p m && cd m && printf 'module m\n' > go.mod && GOPROXY=off GOFLAGS=-mod=mod go get example.com/x@v1.0.0"
# A secret hidden as the sandbox hides it: an empty read-only tmpfs.
unshare -rm sh -c 'mount -t tmpfs -o ro tmpfs /etc/ssl/private && cat /etc/ssl/private/server.key' 2>"$out/hidden-cat.stderr" >/dev/null
# A system call refused (seccomp and a missing capability both say EPERM).
nobody eperm-unshare 'unshare -m true'
# network = "allowlist": a proxy that refuses the host with 403, as
# toolhost's proxy does for a domain not in allowed_domains.
python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept(); c.recv(4096)
c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"); c.close()
' > "$work/port" &
sleep 1
curl -sS -x "http://127.0.0.1:$(cat "$work/port")" https://example.com/ 2>"$out/proxy-curl-403.stderr" >/dev/null
wait
# A mount point moved or removed (EBUSY): the project's .git, which the
# sandbox binds onto itself so that it cannot be replaced.
busy() { # name, command: run with the project's .git a mount point
	unshare -rm sh -c "mount --bind '$work/proj/.git' '$work/proj/.git' && cd '$work/proj' && $2" 2>"$out/$1.stderr" >/dev/null
}
busy busy-mv 'mv .git .gitx'
busy busy-rm 'rm -rf .git'
busy busy-python 'python3 -c "import os; os.rename(\".git\", \"x\")"'
# A path in the host's /tmp or /var/tmp: inside, both are the call's
# private directory (an empty tmpfs over each here, as the sandbox mounts
# the call's tmp there), which has no e14host although the host has one.
# Writing there fails with ENOENT, not a denial.
mkdir -p /tmp/e14host /var/tmp/e14host && echo x > /tmp/e14host/in
private() { # name, command: run with /tmp and /var/tmp empty
	unshare -rm sh -c "mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /var/tmp && $2" 2>"$out/$1.stderr" >/dev/null
}
private enoent-tmp-dash 'echo x > /tmp/e14host/out'
private enoent-tmp-bash 'bash -c "echo x > /tmp/e14host/out"'
private enoent-tmp-touch 'touch /tmp/e14host/out'
private enoent-tmp-cat 'cat /tmp/e14host/in'
private enoent-tmp-python 'python3 -c "open(\"/tmp/e14host/out\", \"w\")" 2>&1 >/dev/null | tail -n 1 >&2'
# Go's error, from a program built outside (the shell stays in $work,
# which the empty /tmp then covers).
(cd "$work" && printf 'package main\n\nimport "os"\n\nfunc main() {\n\tif err := os.WriteFile("/tmp/e14host/out", nil, 0o644); err != nil {\n\t\tprintln(err.Error())\n\t\tos.Exit(1)\n\t}\n}\n' > w.go && go build -o w w.go)
unshare -rm sh -c "cd '$work' && mount -t tmpfs tmpfs /tmp && ./w" 2>"$out/enoent-tmp-go.stderr" >/dev/null
private enoent-vartmp-cp 'cp /etc/hostname /var/tmp/e14host/out'
# The same in the call's own tmp, where the directory does not exist
# either: the command's own business, no hint.
private enoent-tmp-own 'touch /tmp/e14own/out'
rm -rf /tmp/e14host /var/tmp/e14host
# An ordinary failure that is no denial: Hint must stay silent on it.
ro plain-missing 'cat /nonexistent-e14'

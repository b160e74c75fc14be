//go:build linux

package confine

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// probeSource is probe.py, which the network and kernel cases run with
// the system's python3 (in /usr, readable under every policy): it prints
// what each attempt gave, "CONNECTED"/"ALLOWED" when it succeeded.
const probeSource = `import ctypes, socket, subprocess, sys

def attempt(family, kind, address):
    s = socket.socket(family, kind)
    s.settimeout(3)
    try:
        if kind == socket.SOCK_DGRAM:
            s.sendto(b"escape", address)
            print("sent", address)
        else:
            s.connect(address)
            s.sendall(b"escape\r\n\r\n")
            print("CONNECTED", address)
    except OSError as e:
        print("refused", address, e)
    finally:
        s.close()

def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET

def io_uring():
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    fd = libc.syscall(425, 4, params)
    print("io_uring_setup", "ALLOWED fd %d" % fd if fd >= 0 else "denied errno %d" % ctypes.get_errno())

def ptrace():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    child = subprocess.Popen(["sleep", "5"])
    r = libc.ptrace(16, child.pid, None, None)
    print("ptrace_attach", "ALLOWED" if r == 0 else "denied errno %d" % ctypes.get_errno())
    child.kill()
    child.wait()

what = sys.argv[1]
print("PROBE-RAN", what, flush=True)
if what == "tcp":
    attempt(family(sys.argv[2]), socket.SOCK_STREAM, (sys.argv[2], int(sys.argv[3])))
elif what == "udp":
    attempt(family(sys.argv[2]), socket.SOCK_DGRAM, (sys.argv[2], int(sys.argv[3])))
elif what == "unix":
    attempt(socket.AF_UNIX, socket.SOCK_STREAM, sys.argv[2])
elif what == "abstract":
    attempt(socket.AF_UNIX, socket.SOCK_STREAM, "\0" + sys.argv[2])
elif what == "io_uring":
    io_uring()
elif what == "ptrace":
    ptrace()
`

// probe puts probe.py in the root and returns the command running it
// with args.
func (f *fixture) probe(t *testing.T, args ...string) string {
	t.Helper()
	writeFile(t, filepath.Join(f.root, "probe.py"), probeSource)
	return "/usr/bin/python3 probe.py " + strings.Join(args, " ")
}

// counted is a listener of the test's that counts the connections it
// accepted, one at a time and in order.
type counted struct {
	what    string
	network string
	addr    net.Addr
	n       atomic.Int64
}

func listen(t *testing.T, network, address string) (net.Listener, *counted) {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, address, err)
	}
	c := &counted{what: network + " " + ln.Addr().String(), network: network, addr: ln.Addr()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.n.Add(1)
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln, c
}

// fromCommand returns how many connections the listener accepted before
// one the test makes now: the command has ended, so any connection of
// its is queued ahead of the test's, and once the test's is counted
// (within 5 s) the rest is the command's. No
// fixed sleep that a slow machine outlasts.
func (c *counted) fromCommand(t *testing.T) int64 {
	t.Helper()
	before := c.n.Load()
	conn, err := net.DialTimeout(c.network, c.addr.String(), 5*time.Second)
	if err != nil {
		t.Fatalf("the test's own connection to %s: %v", c.what, err)
	}
	defer conn.Close()
	for deadline := time.Now().Add(5 * time.Second); c.n.Load() == before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the listener on %s did not count the test's own connection within 5s", c.what)
		}
	}
	return c.n.Load() - 1
}

// sawNone checks that the command reported no connection (probe.py
// prints CONNECTED when one succeeded) and that none of listeners
// accepted one from it.
func sawNone(t *testing.T, o *outcome, listeners ...*counted) {
	t.Helper()
	if strings.Contains(o.output, "CONNECTED") {
		t.Errorf("a connection of the command succeeded: %s", o)
	}
	for _, l := range listeners {
		if n := l.fromCommand(t); n > 0 {
			t.Errorf("the listener on %s accepted %d connections from the command: %s", l.what, n, o)
		}
	}
}

func port(ln net.Listener) string { return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port) }

// hostAddresses are this machine's addresses other than loopback and
// link-local ones: where a host service listening on every address is
// reached from outside loopback.
func hostAddresses(t *testing.T) []string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		ip, ok := a.(*net.IPNet)
		if ok && !ip.IP.IsLoopback() && !ip.IP.IsLinkLocalUnicast() {
			out = append(out, ip.IP.String())
		}
	}
	return out
}

// "Done when": under the default policy (network
// off) a command reaches no listener of the host's: TCP on 127.0.0.1, on
// the host's other addresses and on [::1], UDP, a Unix socket in the
// root's parent and in /tmp, an abstract Unix socket.
func TestNetworkOff(t *testing.T) {
	t.Run("tcp 127.0.0.1", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{})
		ln, c := listen(t, "tcp4", "127.0.0.1:0")
		o := f.run(t, f.probe(t, "tcp", "127.0.0.1", port(ln))+"; curl -sS -m 3 http://127.0.0.1:"+port(ln)+"/; echo "+probeEnd)
		ranToEnd(t, o)
		sawNone(t, o, c)
	})
	t.Run("tcp to the host's addresses", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{})
		addrs := hostAddresses(t)
		if len(addrs) == 0 {
			t.Skip("this machine has no address besides loopback and link-local ones: nothing outside loopback to reach")
		}
		ln, c := listen(t, "tcp", ":0")
		var cmds []string
		for _, a := range addrs {
			cmds = append(cmds, f.probe(t, "tcp", a, port(ln)))
		}
		o := f.run(t, strings.Join(append(cmds, "echo "+probeEnd), "\n"))
		ranToEnd(t, o)
		sawNone(t, o, c)
	})
	t.Run("tcp [::1]", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{})
		ln, c := listen(t, "tcp6", "[::1]:0")
		o := f.run(t, f.probe(t, "tcp", "::1", port(ln))+"; curl -sS -m 3 -g 'http://[::1]:"+port(ln)+"/'; echo "+probeEnd)
		ranToEnd(t, o)
		sawNone(t, o, c)
	})
	t.Run("udp", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{})
		var cmds []string
		var conns []net.PacketConn
		for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
			pc, err := net.ListenPacket("udp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pc.Close() })
			conns = append(conns, pc)
			a := pc.LocalAddr().(*net.UDPAddr)
			cmds = append(cmds, f.probe(t, "udp", a.IP.String(), fmt.Sprint(a.Port)))
		}
		o := f.run(t, strings.Join(append(cmds, "echo "+probeEnd), "\n"))
		ranToEnd(t, o)
		for _, pc := range conns {
			pc.SetReadDeadline(time.Now().Add(time.Second))
			buf := make([]byte, 64)
			if n, from, err := pc.ReadFrom(buf); err == nil {
				t.Errorf("udp %s received %q from %v, sent by the command: %s", pc.LocalAddr(), buf[:n], from, o)
			}
		}
	})
	t.Run("unix socket of the host", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{})
		var listeners []*counted
		var cmds []string
		for _, path := range []string{filepath.Join(filepath.Dir(f.root), f.mark+".sock"), filepath.Join(os.TempDir(), f.mark+".sock")} {
			_, c := listen(t, "unix", path)
			listeners = append(listeners, c)
			cmds = append(cmds, f.probe(t, "unix", path))
		}
		o := f.run(t, strings.Join(append(cmds, "echo "+probeEnd), "\n"))
		ranToEnd(t, o)
		sawNone(t, o, listeners...)
	})
	t.Run("abstract unix socket of the host", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{})
		_, c := listen(t, "unix", "@"+f.mark)
		o := f.run(t, f.probe(t, "abstract", f.mark)+"; echo "+probeEnd)
		ranToEnd(t, o)
		sawNone(t, o, c)
	})
}

// "Done when": io_uring, which bypasses the
// seccomp filter's view of what a command does, and ptrace are refused.
func TestKernelInterfaces(t *testing.T) {
	t.Run("io_uring", func(t *testing.T) {
		t.Parallel()
		hostAllowsIOURing(t)
		f := newFixture(t, world{})
		o := f.run(t, f.probe(t, "io_uring")+"; echo "+probeEnd)
		ranToEnd(t, o)
		if !strings.Contains(o.output, "io_uring_setup denied") {
			t.Errorf("io_uring_setup was not refused: %s", o)
		}
	})
	t.Run("ptrace", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{})
		o := f.run(t, f.probe(t, "ptrace")+"; echo "+probeEnd)
		ranToEnd(t, o)
		if !strings.Contains(o.output, "ptrace_attach denied") {
			t.Errorf("ptrace(PTRACE_ATTACH) of the command's own child was not refused: %s", o)
		}
	})
}

// hostAllowsIOURing fails the test where io_uring is off for everyone:
// the case would then pass without proving anything.
func hostAllowsIOURing(t *testing.T) {
	t.Helper()
	var params [120]byte
	fd, _, errno := syscall.Syscall(425, 4, uintptr(unsafe.Pointer(&params[0])), 0)
	if errno != 0 {
		t.Fatalf("io_uring_setup fails outside the sandbox too (%v): the case cannot tell confinement from the kernel's settings", errno)
	}
	syscall.Close(int(fd))
}

// server is an HTTP server of the test's that records the paths asked
// and counts the connections accepted.
type server struct {
	addr     string
	body     string
	accepted atomic.Int64
	mu       sync.Mutex
	paths    []string
}

func serve(t *testing.T, address, body string) *server {
	t.Helper()
	ln, err := net.Listen("tcp4", address)
	if err != nil {
		t.Fatalf("listen %s: %v", address, err)
	}
	s := &server{addr: ln.Addr().String(), body: body}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.paths = append(s.paths, r.URL.Path)
			s.mu.Unlock()
			fmt.Fprintln(w, s.body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.accepted.Add(1)
			}
		},
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *server) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}

// "Done when": with network = "allowlist", a fetch
// through toolhost's proxy of an allow-listed local server succeeds
// (plain HTTP and a CONNECT tunnel, with curl honouring the proxy
// variables), while a server on an address not listed, a listed server
// reached by a name not listed (localhost), and a connection around the
// proxy are refused.
func TestAllowlist(t *testing.T) {
	t.Parallel()
	f := newFixture(t, world{network: "allowlist", config: `
[tools.run_command]
network = "allowlist"
allowed_domains = ["127.0.0.1"]
`})
	allowed := serve(t, "127.0.0.1:0", "ALLOWED-"+f.mark)
	unlisted := serve(t, "127.0.0.2:0", "UNLISTED-"+f.mark)
	_, p, _ := net.SplitHostPort(allowed.addr)
	o := f.run(t, `curl -sS -m 20 http://`+allowed.addr+`/allowed; echo
curl -sS -m 20 --proxytunnel http://`+allowed.addr+`/tunnel; echo
curl -sS -m 20 http://`+unlisted.addr+`/unlisted; echo
curl -sS -m 20 http://localhost:`+p+`/by-name; echo
curl -sS -m 5 --noproxy '*' http://`+allowed.addr+`/around-the-proxy; echo
`+f.probe(t, "tcp", "127.0.0.1", p)+`
echo `+probeEnd)
	ranToEnd(t, o)
	if n := strings.Count(o.output, "ALLOWED-"+f.mark); n != 2 {
		t.Errorf("the allow-listed server's answer appears %d times in the output, want 2 (plain and tunnelled): %s", n, o)
	}
	if got := allowed.seen(); !slices.Equal(got, []string{"/allowed", "/tunnel"}) {
		t.Errorf("the allow-listed server was asked for %q, want /allowed and /tunnel only (by-name and around-the-proxy refused): %s", got, o)
	}
	if n, asked := allowed.accepted.Load(), len(allowed.seen()); n > int64(asked) {
		t.Errorf("the allow-listed server accepted %d connections for %d requests: one came around the proxy: %s", n, asked, o)
	}
	if got, n := unlisted.seen(), unlisted.accepted.Load(); len(got) > 0 || n > 0 || strings.Contains(o.output, "UNLISTED-"+f.mark) {
		t.Errorf("the server on an unlisted address was reached (%d connections, paths %q): %s", n, got, o)
	}
	if strings.Contains(o.output, "CONNECTED") {
		t.Errorf("probe.py connected to 127.0.0.1:%s around the proxy: %s", p, o)
	}
	if !strings.Contains(o.output, "allowed_domains") {
		t.Errorf("no refusal naming allowed_domains in the output: %s", o)
	}
}

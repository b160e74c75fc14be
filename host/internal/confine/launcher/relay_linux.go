package launcher

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// relayConns bounds the connections the relay carries at once: a command
// that opens more waits for one to end.
const relayConns = 128

// loopbackUp brings up lo, the only interface of a new network namespace;
// it starts down, and a command's own servers (a test's httptest, a
// database) need it.
func loopbackUp() error {
	_, err := setLoopbackUp(false)
	return err
}

// loopbackUpAhead brings up lo while a warm launcher waits, when lo is
// down: the launcher is in a network namespace of its own. It reports
// whether it did. lo up already is the host's namespace's, which is not
// the launcher's to change.
func loopbackUpAhead() bool {
	done, err := setLoopbackUp(true)
	return done && err == nil
}

// setLoopbackUp sets lo's up flag, or, when onlyIfDown, does nothing
// (false) if lo is up.
func setLoopbackUp(onlyIfDown bool) (bool, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("bring up the loopback interface: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return false, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return false, fmt.Errorf("bring up the loopback interface: %w", err)
	}
	if onlyIfDown && ifr.Uint16()&unix.IFF_UP != 0 {
		return false, nil
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return false, fmt.Errorf("bring up the loopback interface: %w", err)
	}
	return true, nil
}

// listenRelay listens on 127.0.0.1:port in the namespace, where the proxy
// variables point, and relays each connection to the proxy's Unix socket,
// mounted inside at socket. It is called before Landlock and seccomp
// apply; the goroutines it leaves behind serve until the launcher exits.
func listenRelay(socket string, port uint16) error {
	if socket == "" || port == 0 {
		return errors.New("network allowlist needs the proxy's socket and port in the policy")
	}
	var st unix.Stat_t
	if err := unix.Stat(socket, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("the proxy socket %s is not inside the command's root (mount it there): %v", socket, err)
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("listen for the proxy relay: %w", err)
	}
	go serveRelay(ln, socket)
	return nil
}

func serveRelay(ln net.Listener, socket string) {
	slots := make(chan struct{}, relayConns)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		slots <- struct{}{}
		go func() {
			defer func() { <-slots }()
			relay(c, socket)
		}()
	}
}

// relay copies between c and a new connection to the proxy, both ways,
// passing on each side's end of stream.
func relay(c net.Conn, socket string) {
	defer c.Close()
	p, err := net.Dial("unix", socket)
	if err != nil {
		return // the client sees its connection closed
	}
	defer p.Close()
	var wg sync.WaitGroup
	wg.Go(func() { pipe(p, c) })
	pipe(c, p)
	wg.Wait()
}

type closeWriter interface{ CloseWrite() error }

// pipe copies src to dst and passes on the end of stream; a failure
// ends both directions, which would otherwise wait for each other.
func pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	cw, ok := dst.(closeWriter)
	if err != nil || !ok {
		dst.Close()
		src.Close()
		return
	}
	cw.CloseWrite()
}

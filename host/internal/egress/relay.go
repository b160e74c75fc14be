package egress

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// relay passes bytes both ways between a client and a remote host until
// both directions end, either side fails, the tunnel is idle for
// set.idle, or the proxy closes. It closes both connections. clientR
// reads the client (its early bytes first).
func (p *Proxy) relay(client net.Conn, clientR io.Reader, remote net.Conn) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	closeBoth := func() {
		_ = client.Close()
		_ = remote.Close()
	}
	// The watchdog re-arms itself; mu orders its reading of watch after
	// the assignment.
	var mu sync.Mutex
	var watch *time.Timer
	mu.Lock()
	watch = time.AfterFunc(p.set.idle, func() {
		idle := time.Since(time.Unix(0, last.Load()))
		if idle >= p.set.idle {
			p.log.Debug("egress: idle tunnel closed", "remote", remote.RemoteAddr().String(), "idle", idle)
			closeBoth()
			return
		}
		mu.Lock()
		watch.Reset(p.set.idle - idle)
		mu.Unlock()
	})
	mu.Unlock()
	defer func() {
		mu.Lock()
		watch.Stop()
		mu.Unlock()
	}()

	done := make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(done)
		if pipe(remote, clientR, &last) != nil {
			closeBoth()
		}
	}()
	if pipe(client, remote, &last) != nil {
		closeBoth()
	}
	<-done
	closeBoth()
}

// pipe copies src to dst, recording the time of each transfer in last.
// At the end of src it half-closes dst and returns nil; on a failure it
// returns the error.
func pipe(dst net.Conn, src io.Reader, last *atomic.Int64) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			if cw, ok := dst.(interface{ CloseWrite() error }); ok {
				return cw.CloseWrite()
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

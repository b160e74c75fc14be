package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// The anonymous budget closes its oldest connection not in a request
// for each new one past it; a connection that showed the token leaves
// it, and is never closed to make room; past the token holders' limit
// Accept waits until one of them closes.
func TestConnLimiterBudgets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := limitConnections(ln, 2, 2)
	defer l.Close()
	dial := func() (client net.Conn, server *trackedConn) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c, s.(*trackedConn)
	}
	closedByServer := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}
	a, as := dial()
	authenticated(withConn(context.Background(), as)) // a showed the token
	b, bs := dial()
	connState(bs, http.StateActive) // b is in the middle of a request
	c, _ := dial()
	d, ds := dial() // the budget (2) is full: the oldest idle one, c, goes
	if !closedByServer(c) {
		t.Error("the oldest anonymous connection not in a request stayed open past the budget")
	}
	if closedByServer(a) || closedByServer(b) || closedByServer(d) {
		t.Error("a connection with the token, one in a request, or the newest was closed to make room")
	}

	// d shows the token too: the token holders' limit (2) is reached, and
	// Accept waits until one of them closes.
	authenticated(withConn(context.Background(), ds))
	accepted := make(chan net.Conn, 1)
	go func() {
		s, err := l.Accept()
		if err == nil {
			accepted <- s
		}
	}()
	e, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	select {
	case <-accepted:
		t.Fatal("accepted past the token holders' limit")
	case <-time.After(200 * time.Millisecond):
	}
	as.Close()
	select {
	case s := <-accepted:
		s.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no accept after a token holder's connection closed")
	}
}

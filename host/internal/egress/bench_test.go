package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
)

// The cost of the proxy: a new connection and one
// echo, dialed directly, through CONNECT and through SOCKS5; and one
// echo over a tunnel already open. Compare the ns/op of each pair.

func BenchmarkDialDirect(b *testing.B) {
	echo := echoServer(b, "127.0.0.1:0")
	msg := []byte("x")
	for b.Loop() {
		c, err := net.Dial("tcp", echo)
		if err != nil {
			b.Fatal(err)
		}
		echoOnce(b, c, msg)
		c.Close()
	}
}

func BenchmarkDialConnect(b *testing.B) {
	echo := echoServer(b, "127.0.0.1:0")
	p := proxyFor(b, Rules{Allowed: []string{"127.0.0.1"}}, nil, nil)
	msg := []byte("x")
	req := fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", echo, echo)
	for b.Loop() {
		c, err := net.Dial("unix", p.Addr())
		if err != nil {
			b.Fatal(err)
		}
		io.WriteString(c, req)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(resp, err)
		}
		echoOnce(b, c, msg)
		c.Close()
	}
}

func BenchmarkDialSOCKS5(b *testing.B) {
	echo := echoServer(b, "127.0.0.1:0")
	p := proxyFor(b, Rules{Allowed: []string{"127.0.0.1"}}, nil, nil)
	port := portOf(b, echo)
	msg := []byte("x")
	for b.Loop() {
		_, c := socksConnect(b, p, socksAtypIPv4, "127.0.0.1", port)
		echoOnce(b, c, msg)
		c.Close()
	}
}

func BenchmarkEchoDirect(b *testing.B) {
	c, err := net.Dial("tcp", echoServer(b, "127.0.0.1:0"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg := []byte("x")
	for b.Loop() {
		echoOnce(b, c, msg)
	}
}

func BenchmarkEchoTunnel(b *testing.B) {
	echo := echoServer(b, "127.0.0.1:0")
	p := proxyFor(b, Rules{Allowed: []string{"127.0.0.1"}}, nil, nil)
	_, c := socksConnect(b, p, socksAtypIPv4, "127.0.0.1", portOf(b, echo))
	msg := []byte("x")
	for b.Loop() {
		echoOnce(b, c, msg)
	}
}

func echoOnce(b *testing.B, c net.Conn, msg []byte) {
	if _, err := c.Write(msg); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(c, msg); err != nil {
		b.Fatal(err)
	}
}

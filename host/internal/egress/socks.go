package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// SOCKS5 (RFC 1928): the version byte, and the values this proxy uses.
const (
	socksVersion    = 0x05
	socksNoAuth     = 0x00
	socksNoMethod   = 0xff
	socksCmdConnect = 0x01
	socksAtypIPv4   = 0x01
	socksAtypName   = 0x03
	socksAtypIPv6   = 0x04
	socksSucceeded  = 0x00
	socksFailure    = 0x01
	socksNotAllowed = 0x02 // connection not allowed by ruleset
	socksNetUnr     = 0x03
	socksHostUnr    = 0x04
	socksRefused    = 0x05
	socksBadCmd     = 0x07
	socksBadAtyp    = 0x08
)

// serveSOCKS answers one SOCKS5 client: no authentication, CONNECT only,
// to a name, an IPv4 or an IPv6 address. br holds what was read ahead.
func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader) {
	host, err := socksHandshake(c, br)
	if err != nil {
		var se socksError
		if errors.As(err, &se) {
			_ = socksReply(c, byte(se))
		}
		p.log.Debug("egress: socks5 handshake", "err", err)
		_ = c.Close()
		return
	}
	// Dialing has its own bounds; the handshake's deadline would cut
	// the tunnel.
	_ = c.SetDeadline(time.Time{})
	up, err := p.dial(p.ctx, "socks5", host)
	if err != nil {
		_ = socksReply(c, socksCode(err))
		_ = c.Close()
		return
	}
	if err := socksReply(c, socksSucceeded); err != nil {
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.relay(c, br, up)
}

// socksError is a request the proxy answers with that reply code.
type socksError byte

func (e socksError) Error() string { return "socks5 reply " + strconv.Itoa(int(e)) }

// socksHandshake reads the method negotiation and the request, and
// returns the host:port asked for.
func socksHandshake(c net.Conn, br *bufio.Reader) (string, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return "", err
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return "", err
	}
	method := byte(socksNoMethod)
	for _, m := range methods {
		if m == socksNoAuth {
			method = socksNoAuth
		}
	}
	if _, err := c.Write([]byte{socksVersion, method}); err != nil {
		return "", err
	}
	if method == socksNoMethod {
		return "", errors.New("socks5 client offers no method without authentication")
	}
	var req [4]byte // version, command, reserved, address type
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return "", err
	}
	if req[0] != socksVersion {
		return "", errors.New("socks5 request of another version")
	}
	if req[1] != socksCmdConnect {
		return "", socksError(socksBadCmd)
	}
	var host string
	switch req[3] {
	case socksAtypIPv4:
		var a [4]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return "", err
		}
		host = netip.AddrFrom4(a).String()
	case socksAtypIPv6:
		var a [16]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return "", err
		}
		host = netip.AddrFrom16(a).String()
	case socksAtypName:
		n, err := br.ReadByte()
		if err != nil {
			return "", err
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(br, name); err != nil {
			return "", err
		}
		host = string(name)
	default:
		return "", socksError(socksBadAtyp)
	}
	var port [2]byte
	if _, err := io.ReadFull(br, port[:]); err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port[:])))), nil
}

// socksReply sends a reply with code. Its bound address is always
// 0.0.0.0:0: the real one would be the host's outbound address, which a
// confined command has no use for and should not learn; CONNECT clients ignore it.
func socksReply(c net.Conn, code byte) error {
	_, err := c.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

// socksCode is the reply for a failed connection.
func socksCode(err error) byte {
	var re *RefusedError
	var dns *net.DNSError
	switch {
	case errors.As(err, &re):
		return socksNotAllowed
	case errors.As(err, &dns):
		return socksHostUnr
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return socksNetUnr
	case errors.Is(err, syscall.EHOSTUNREACH):
		return socksHostUnr
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return socksHostUnr
	}
	return socksFailure
}

package devserver

import (
	"fmt"
	"net"
	"strconv"
	"sync"
)

// handedOut remembers every port picked in this process, so two Servers
// started side by side never receive the same one even when the kernel
// would offer it again before the first server has bound it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a TCP port on host that nothing listens on now.
//
// The port is closed again before the server binds it, so it could be taken
// in between. To make that unlikely, a connection is made to it and closed
// from the listening side: the port then sits in TIME_WAIT, which keeps the
// kernel from handing it to other bind(:0) callers for a while, yet the
// server can still bind it because Go listeners set SO_REUSEADDR.
func freePort(host string) (int, error) {
	for range 16 {
		port, err := probePort(host)
		if err != nil {
			return 0, err
		}
		handedOut.Lock()
		taken := handedOut.ports[port]
		handedOut.ports[port] = true
		handedOut.Unlock()
		if !taken {
			return port, nil
		}
	}
	return 0, fmt.Errorf("picking a free port on %s: every candidate was already handed out", host)
}

func probePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("picking a free port on %s: %w", host, err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	client, err := net.Dial("tcp", net.JoinHostPort(dialHost(host), strconv.Itoa(port)))
	if err != nil {
		return 0, fmt.Errorf("reserving port %d on %s: %w", port, host, err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		return 0, fmt.Errorf("reserving port %d on %s: %w", port, host, err)
	}
	server.Close()
	return port, nil
}

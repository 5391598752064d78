package runner

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SandboxNet gives a sandboxed run a network of its own with nothing in
// it but its loopback: no route out, no abstract socket of the worker's,
// no listener of the machine's (the open API of `ampflow dev`, Temporal,
// PostgreSQL). What the run may reach, it reaches through Ports: on each
// loopback address inside, a bridge (BridgeMain, run as the sandbox's
// first process) takes connections and passes each to a unix socket the
// worker listens on outside, which decides what it reaches.
type SandboxNet struct {
	// Bridge is the command that runs BridgeMain: the ampflow
	// executable and its sandbox-bridge argument.
	Bridge []string
	// Ports are the addresses the bridge listens on inside.
	Ports []Port
	// Catch, when set, is where the bridge listens for the connections
	// it catches (sandbox_catch.go), and the socket it passes them to.
	Catch *Port
}

// Port is a loopback address inside a sandbox (127.0.0.1:7480) and the
// unix socket outside it that takes its connections.
type Port struct {
	Addr   string
	Socket string
}

// argv is the bridge's command line around the CLI's argv.
func (n *SandboxNet) argv(argv []string) []string {
	out := append([]string{}, n.Bridge...)
	for _, p := range n.Ports {
		out = append(out, "--listen", p.Addr+"="+p.Socket)
	}
	if n.Catch != nil {
		out = append(out, "--catch", n.Catch.Addr+"="+n.Catch.Socket)
	}
	return append(append(out, "--"), argv...)
}

// BridgeMain is the sandbox's bridge: args are --listen ADDR=SOCKET
// pairs, then --, then the command to run. It listens on every ADDR
// before it starts the command, passes each connection to its SOCKET,
// hands the command the signals it gets, and returns the command's exit
// status.
func BridgeMain(args []string) int {
	b, err := bridgeArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ampflow sandbox-bridge:", err)
		return 125
	}
	if b.catch != nil && b.ready == "" {
		return bridgeStageOne(args, *b.catch)
	}
	ports, argv := b.ports, b.argv
	if b.catch != nil && b.ready == "on" {
		ln, err := net.Listen("tcp", b.catch.Addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ampflow sandbox-bridge: listening on %s: %v\n", b.catch.Addr, err)
			return 125
		}
		go serveCatch(ln, b.catch.Socket)
	}
	for _, p := range ports {
		ln, err := net.Listen("tcp", p.Addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ampflow sandbox-bridge: listening on %s: %v\n", p.Addr, err)
			return 125
		}
		go Forward(ln, "unix", p.Socket)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "ampflow sandbox-bridge: starting %s: %v\n", argv[0], err)
		return 127
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "ampflow sandbox-bridge: %v\n", err)
	return 1
}

// bridge is the bridge's command line: its ports, its catch, whether its
// first stage set the catch up ("on", "off"; "" in the first stage),
// and the command.
type bridge struct {
	ports []Port
	catch *Port
	ready string
	argv  []string
}

func bridgeArgs(args []string) (bridge, error) {
	var b bridge
	port := func(i int) (Port, error) {
		if i+1 == len(args) {
			return Port{}, fmt.Errorf("%s needs ADDR=SOCKET", args[i])
		}
		addr, sock, ok := strings.Cut(args[i+1], "=")
		if !ok || addr == "" || sock == "" {
			return Port{}, fmt.Errorf("%s %q: not ADDR=SOCKET", args[i], args[i+1])
		}
		return Port{Addr: addr, Socket: sock}, nil
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 == len(args) {
				return b, errors.New("no command after --")
			}
			b.argv = args[i+1:]
			return b, nil
		case a == "--listen" || a == "--catch":
			p, err := port(i)
			if err != nil {
				return b, err
			}
			if a == "--catch" {
				b.catch = &p
			} else {
				b.ports = append(b.ports, p)
			}
			i++
		case strings.HasPrefix(a, netReady+"="):
			b.ready = strings.TrimPrefix(a, netReady+"=")
		default:
			return b, fmt.Errorf("unknown argument %q (usage: --listen ADDR=SOCKET ... [--catch ADDR=SOCKET] -- COMMAND ...)", a)
		}
	}
	return b, errors.New("no -- before the command")
}

// Forward passes each connection ln accepts to a new connection to
// address on network, until ln is closed.
func Forward(ln net.Listener, network, address string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			t, err := net.DialTimeout(network, address, 10*time.Second)
			if err != nil {
				return
			}
			defer t.Close()
			Splice(c, t)
		}()
	}
}

// Splice copies a to b and b to a until both directions end, closing
// each side's writing half when its reading half ends, so a request
// whose sender is done still gets its answer.
func Splice(a, b net.Conn) {
	var wg sync.WaitGroup
	one := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Add(2)
	go one(a, b)
	go one(b, a)
	wg.Wait()
}

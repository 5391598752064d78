package runner

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// A program that ignores the proxy variables (node's fetch, bash's
// /dev/tcp, a static binary) would reach nothing from a run's network
// namespace: it has no route out. With SandboxNet.Catch, its connections
// to any address off the run's loopback are caught instead: the bridge
// gives the namespace a route that makes every address local and an
// nftables rule that redirects each TCP connection to it to the catch
// port, where it reads the address the program asked for and passes the
// connection to the worker's catch socket, preceded by "host:port\n";
// the worker decides it as the egress proxy decides a CONNECT. The run's
// own loopback is left alone: a server a test starts inside is reached
// as it should be.
//
// Setting the namespace up needs CAP_NET_ADMIN, which the sandbox gives
// the bridge's first stage alone: it runs ip and nft, drops every
// capability of its thread (the bounding set too, so none comes back on
// exec, also as the namespace's root), and execs the bridge again,
// which then holds none, nor does anything it starts.

// catchCaps are the capabilities the bridge's first stage gets.
var catchCaps = []string{"CAP_NET_ADMIN", "CAP_SETPCAP"}

// netReady marks the bridge's second stage on its command line.
const netReady = "--net-ready"

// setUpCatch routes every address to the namespace's loopback and
// redirects TCP connections to any address off it to catchPort. It says
// why when it cannot: no ip or nft on the machine (Debian's iproute2 and
// nftables), or a kernel without nftables' NAT.
func setUpCatch(catchPort int) error {
	if out, err := exec.Command(sbin("ip"), "route", "add", "local", "0.0.0.0/0", "dev", "lo").CombinedOutput(); err != nil {
		return fmt.Errorf("ip route add local 0.0.0.0/0 dev lo: %v: %s", err, bytes.TrimSpace(out))
	}
	rules := fmt.Sprintf(`table ip ampflow {
	chain out {
		type nat hook output priority -100; policy accept;
		ip daddr 127.0.0.0/8 accept
		meta l4proto tcp redirect to :%d
	}
}
`, catchPort)
	cmd := exec.Command(sbin("nft"), "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// sbin finds a system tool where the run's PATH may not look.
func sbin(name string) string {
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if p := dir + "/" + name; fileExists(p) {
			return p
		}
	}
	return name
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// dropCaps drops every capability of the calling thread, which must be
// locked to it and exec next: the bounding set (while CAP_SETPCAP is
// still there), the ambient set, then the rest.
func dropCaps() error {
	const prCapBSetDrop, prCapAmbient, prCapAmbientClearAll = 24, 47, 4
	for c := 0; c < 64; c++ {
		if c == 8 { // CAP_SETPCAP goes last
			continue
		}
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prCapBSetDrop, uintptr(c), 0)
	}
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prCapBSetDrop, 8, 0)
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0)
	hdr := struct {
		version uint32
		pid     int32
	}{0x20080522, 0}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}

// bridgeStageOne sets the namespace up for the catch, drops the
// capabilities and execs the bridge's second stage; it returns only if
// that exec fails. A namespace it cannot set up goes on without the
// catch, as a warning in the run's stderr.
func bridgeStageOne(args []string, catch Port) int {
	runtime.LockOSThread()
	catchArg := "on"
	_, port, _ := net.SplitHostPort(catch.Addr)
	if cp, err := strconv.Atoi(port); err != nil {
		fmt.Fprintf(os.Stderr, "ampflow sandbox-bridge: --catch %s: no port\n", catch.Addr)
		return 125
	} else if err := setUpCatch(cp); err != nil {
		fmt.Fprintf(os.Stderr, "ampflow sandbox-bridge: connections that ignore the proxy are not caught (%v); they reach nothing\n", err)
		catchArg = "off"
	}
	if err := dropCaps(); err != nil {
		fmt.Fprintln(os.Stderr, "ampflow sandbox-bridge:", err)
		return 125
	}
	// The bridge is started as `EXECUTABLE sandbox-bridge ARGS`: its
	// second stage the same way, marked.
	next := append([]string{os.Args[0], os.Args[1], netReady + "=" + catchArg}, args...)
	err := syscall.Exec("/proc/self/exe", next, os.Environ())
	fmt.Fprintln(os.Stderr, "ampflow sandbox-bridge: exec:", err)
	return 125
}

// serveCatch passes each caught connection to socket, preceded by the
// address its program asked for.
func serveCatch(ln net.Listener, socket string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			dest, err := originalDst(c)
			if err != nil {
				return
			}
			t, err := net.DialTimeout("unix", socket, 10*time.Second)
			if err != nil {
				return
			}
			defer t.Close()
			if _, err := fmt.Fprintf(t, "%s\n", dest); err != nil {
				return
			}
			Splice(c, t)
		}()
	}
}

// originalDst is the address a redirected connection was made to
// (SO_ORIGINAL_DST, a sockaddr_in).
func originalDst(c net.Conn) (string, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return "", fmt.Errorf("not TCP")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return "", err
	}
	var addr [16]byte
	var serr error
	err = raw.Control(func(fd uintptr) {
		size := uint32(len(addr))
		const soOriginalDst = 80
		_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.SOL_IP, soOriginalDst,
			uintptr(unsafe.Pointer(&addr[0])), uintptr(unsafe.Pointer(&size)), 0)
		if e != 0 {
			serr = e
		}
	})
	if err != nil {
		return "", err
	}
	if serr != nil {
		return "", serr
	}
	port := binary.BigEndian.Uint16(addr[2:4])
	return net.JoinHostPort(net.IP(addr[4:8]).String(), strconv.Itoa(int(port))), nil
}

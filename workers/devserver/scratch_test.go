package devserver

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestScratchBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{DataDir: t.TempDir(), Port: ln.Addr().(*net.TCPAddr).Port, Logger: testLogger()})
	t.Logf("err %v", err)
	if err == nil {
		s.Stop()
	}
}

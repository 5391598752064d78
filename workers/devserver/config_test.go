package devserver

import (
	"context"
	"testing"
)

func TestDialHost(t *testing.T) {
	tests := []struct{ ip, want string }{
		{"127.0.0.1", "127.0.0.1"},
		{"0.0.0.0", "127.0.0.1"},
		{"::", "::1"},
		{"::1", "::1"},
		{"192.0.2.7", "192.0.2.7"},
	}
	for _, tt := range tests {
		if got := dialHost(tt.ip); got != tt.want {
			t.Errorf("dialHost(%q) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}

func TestStartRejectsOptions(t *testing.T) {
	tests := []struct {
		name string
		o    Options
	}{
		{"NoDataDir", Options{}},
		{"HostName", Options{DataDir: "x", IP: "localhost"}},
		{"NegativePort", Options{DataDir: "x", Port: -1}},
		{"UIPortTooHigh", Options{DataDir: "x", UIPort: 70000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := Start(context.Background(), tt.o); err == nil {
				_ = s.Stop()
				t.Fatalf("Start(%+v) succeeded", tt.o)
			}
		})
	}
}

package runcred

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
)

func TestMintVerify(t *testing.T) {
	key := Key([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Unix(1_800_000_000, 0)
	tok, c, err := Mint(key, Claims{Task: "T-2026-001", Role: amp.RoleExecutor, Expires: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if !Is(tok) || c.Run == "" || c.Agent != "executor" {
		t.Fatalf("minted %q %+v", tok, c)
	}
	got, err := Verify(key, tok, now)
	if err != nil || got != c {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, c)
	}
	other, _, _ := Mint(key, Claims{Task: "T-2026-001", Role: amp.RoleExecutor, Expires: c.Expires})
	if other == tok {
		t.Fatal("two runs of one task and role got the same credential")
	}

	if _, err := Verify(key, tok, now.Add(time.Hour)); !errors.Is(err, ErrExpired) {
		t.Fatalf("at its expiry: %v, want ErrExpired", err)
	}
	if _, err := Verify(Key([]byte("another decision key, 32 bytes!!")), tok, now); !errors.Is(err, ErrSignature) {
		t.Fatalf("another key: %v, want ErrSignature", err)
	}
	// A run that rewrites its claims (another task, the reviewer's role)
	// keeps the signature of the old ones.
	payload, sig, _ := strings.Cut(strings.TrimPrefix(tok, Prefix), ".")
	body, _ := base64.RawURLEncoding.DecodeString(payload)
	for _, forged := range []string{
		strings.Replace(string(body), "T-2026-001", "T-2026-002", 1),
		strings.Replace(string(body), `"executor"`, `"reviewer"`, 2),
	} {
		s := Prefix + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + sig
		if _, err := Verify(key, s, now); !errors.Is(err, ErrSignature) {
			t.Errorf("forged %s: %v, want ErrSignature", forged, err)
		}
	}
	for _, bad := range []string{"", "ampr1.", "ampr1.x", "ampr1.!!.!!", "a-token"} {
		if _, err := Verify(key, bad, now); !errors.Is(err, ErrMalformed) {
			t.Errorf("Verify(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestMintRefuses(t *testing.T) {
	key := Key([]byte("k"))
	exp := time.Now().Add(time.Hour).Unix()
	for _, c := range []Claims{
		{Role: amp.RoleExecutor, Expires: exp},
		{Task: "T-2026-001", Role: amp.RoleAdmin, Expires: exp},
		{Task: "T-2026-001", Role: amp.RoleCoordinator, Expires: exp},
		{Task: "T-2026-001", Role: amp.RoleReviewer},
	} {
		if _, _, err := Mint(key, c); err == nil {
			t.Errorf("Mint(%+v) took it", c)
		}
	}
	if _, _, err := Mint(nil, Claims{Task: "T-2026-001", Role: amp.RoleReviewer, Expires: exp}); err == nil {
		t.Error("Mint with no key took it")
	}
}

package secrets

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	k1, _ := GenerateKey()
	k2, _ := GenerateKey()
	c1, _ := NewCipher(k1)
	both, _ := NewCipher(k2, k1)
	sealed, err := c1.Seal([]byte("record-a"), []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c1.Seal([]byte("record-a"), []byte("secret"))
	if string(sealed) == string(again) || strings.Contains(string(sealed), "secret") {
		t.Fatal("sealing is deterministic or leaks the plaintext")
	}
	if SealedKeyID(sealed) != k1.ID() {
		t.Fatalf("key id %s, want %s", SealedKeyID(sealed), k1.ID())
	}
	cases := []struct {
		name    string
		c       *Cipher
		aad     string
		mutate  func([]byte) []byte
		wantErr error
	}{
		{"same key", c1, "record-a", nil, nil},
		{"old key kept during rotation", both, "record-a", nil, nil},
		{"other record", c1, "record-b", nil, ErrTampered},
		{"flipped bit", c1, "record-a", func(b []byte) []byte { b[len(b)-3] ^= 1; return b }, ErrTampered},
		{"truncated", c1, "record-a", func(b []byte) []byte { return b[:10] }, ErrTampered},
		{"other key", func() *Cipher { c, _ := NewCipher(k2); return c }(), "record-a", nil, ErrWrongKey},
	}
	for _, tc := range cases {
		in := append([]byte(nil), sealed...)
		if tc.mutate != nil {
			in = tc.mutate(in)
		}
		pt, err := tc.c.Open([]byte(tc.aad), in)
		if !errors.Is(err, tc.wantErr) || (err == nil && string(pt) != "secret") {
			t.Errorf("%s: %q %v", tc.name, pt, err)
		}
	}
}

func TestKeyParsingAndFiles(t *testing.T) {
	k, _ := GenerateKey()
	for _, s := range []string{k.String(), hex.EncodeToString(k[:]), strings.TrimRight(k.String(), "=") + "\n"} {
		got, err := ParseKey(s)
		if err != nil || got != k {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "short", strings.Repeat("A", 10) + "==", "!!!"} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	path := filepath.Join(t.TempDir(), "sub", "db.key")
	if err := WriteKeyFile(path, k); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	got, err := ReadKeyFile(path)
	if err != nil || got != k {
		t.Fatalf("read back: %v", err)
	}
	os.Chmod(path, 0o640)
	if _, err := ReadKeyFile(path); err == nil {
		t.Fatal("group-readable key file accepted")
	}
}

package store

import (
	"bytes"
	"context"
	"testing"
)

// A secret is stored encrypted (never its plaintext in the database),
// survives a key rotation, and is refused when its record is tampered with.
func TestSecretIsEncryptedAndRotated(t *testing.T) { eachBackend(t, testSecret) }

func testSecret(t *testing.T, opt Options) {
	ctx := context.Background()
	s := open(t, opt)
	if _, ok, err := s.Secret(ctx, "provision/ssh-key"); ok || err != nil {
		t.Fatalf("absent secret: %v %v", ok, err)
	}
	plain := []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nxyz\n")
	if err := s.PutSecret(ctx, "provision/ssh-key", plain); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := s.db.QueryRow(`SELECT value FROM encrypted WHERE name = ?`, "secret/provision/ssh-key").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("OPENSSH")) {
		t.Fatal("the secret is stored in clear")
	}
	if _, err := s.RotateKey(ctx, ""); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Secret(ctx, "provision/ssh-key")
	if err != nil || !ok || !bytes.Equal(got, plain) {
		t.Fatalf("after rotation: %q %v %v", got, ok, err)
	}
	// A record moved under another name does not open (its name is bound).
	if _, err := s.db.Exec(`INSERT INTO encrypted (name, value, updated_at) SELECT 'secret/other', value, 0 FROM encrypted WHERE name = 'secret/provision/ssh-key'`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Secret(ctx, "other"); err == nil {
		t.Fatal("a record copied under another name was accepted")
	}
}

func TestDeleteState(t *testing.T) { eachBackend(t, testDeleteState) }

func testDeleteState(t *testing.T, opt Options) {
	ctx := context.Background()
	s := open(t, opt)
	if err := s.PutState(ctx, "provision/hostkey/Container/a", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteState(ctx, "provision/hostkey/Container/a"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.State(ctx, "provision/hostkey/Container/a"); ok || err != nil {
		t.Fatalf("still there: %v %v", ok, err)
	}
	if err := s.DeleteState(ctx, "absent"); err != nil {
		t.Fatal(err)
	}
}

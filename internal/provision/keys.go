package provision

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/proxmops/proxmops/internal/vocab"
)

// Store keeps proxmops' SSH key pair (encrypted) and the host keys pinned
// on first contact. *store.Store implements it; MemStore is the in-memory
// one.
type Store interface {
	// Secret reads an encrypted record (ok false when there is none).
	Secret(ctx context.Context, name string) (value []byte, ok bool, err error)
	PutSecret(ctx context.Context, name string, value []byte) error
	// State, PutState and DeleteState keep plain records.
	State(ctx context.Context, key string) (value []byte, ok bool, err error)
	PutState(ctx context.Context, key string, value []byte) error
	DeleteState(ctx context.Context, key string) error
}

// Prefixed is st with every state key kept under prefix (secrets stay
// shared): one cluster's records beside another's in one store.
func Prefixed(st Store, prefix string) Store { return prefixed{st, prefix} }

type prefixed struct {
	Store
	prefix string
}

func (p prefixed) State(ctx context.Context, key string) ([]byte, bool, error) {
	return p.Store.State(ctx, p.prefix+key)
}

func (p prefixed) PutState(ctx context.Context, key string, value []byte) error {
	return p.Store.PutState(ctx, p.prefix+key, value)
}

func (p prefixed) DeleteState(ctx context.Context, key string) error {
	return p.Store.DeleteState(ctx, p.prefix+key)
}

// keyRecord is the name of the encrypted record of the generated key.
const keyRecord = "provision/ssh-key"

// MemStore is a Store in memory (tests, and a CLI run without a database).
type MemStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *MemStore) get(k string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	return v, ok
}

func (s *MemStore) put(k string, v []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[k] = append([]byte(nil), v...)
}

// Secret implements Store.
func (s *MemStore) Secret(_ context.Context, name string) ([]byte, bool, error) {
	v, ok := s.get("secret/" + name)
	return v, ok, nil
}

// PutSecret implements Store.
func (s *MemStore) PutSecret(_ context.Context, name string, v []byte) error {
	s.put("secret/"+name, v)
	return nil
}

// State implements Store.
func (s *MemStore) State(_ context.Context, key string) ([]byte, bool, error) {
	v, ok := s.get("state/" + key)
	return v, ok, nil
}

// PutState implements Store.
func (s *MemStore) PutState(_ context.Context, key string, v []byte) error {
	s.put("state/"+key, v)
	return nil
}

// DeleteState implements Store.
func (s *MemStore) DeleteState(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, "state/"+key)
	return nil
}

// Keys gives proxmops' client key and checks guests' host keys.
type Keys struct {
	store   Store
	keyFile string

	mu     sync.Mutex
	signer ssh.Signer
}

// NewKeys uses the private key in keyFile (OpenSSH or PEM, unencrypted)
// when set, else a generated ed25519 key kept encrypted in st.
func NewKeys(st Store, keyFile string) *Keys {
	if st == nil {
		st = &MemStore{}
	}
	return &Keys{store: st, keyFile: keyFile}
}

// Signer returns the client key, generating and storing it on first use.
func (k *Keys) Signer(ctx context.Context) (ssh.Signer, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.signer != nil {
		return k.signer, nil
	}
	var pemBytes []byte
	if k.keyFile != "" {
		b, err := os.ReadFile(k.keyFile)
		if err != nil {
			return nil, fmt.Errorf("provision.sshKeyFile: %w", err)
		}
		pemBytes = b
	} else {
		b, ok, err := k.store.Secret(ctx, keyRecord)
		if err != nil {
			return nil, fmt.Errorf("reading the provisioning key from the store: %w", err)
		}
		if !ok {
			if b, err = generateKey(); err != nil {
				return nil, err
			}
			if err := k.store.PutSecret(ctx, keyRecord, b); err != nil {
				return nil, fmt.Errorf("storing the provisioning key: %w", err)
			}
		}
		pemBytes = b
	}
	s, err := ssh.ParsePrivateKey(pemBytes)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, fmt.Errorf("provision.sshKeyFile %s is protected by a passphrase: give proxmops a key without one", k.keyFile)
		}
		return nil, fmt.Errorf("provisioning key: %w", err)
	}
	k.signer = s
	return s, nil
}

func generateKey() ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	blk, err := ssh.MarshalPrivateKey(priv, "proxmops")
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(blk), nil
}

// PublicKey is the client key in authorized_keys form, with the comment
// "proxmops".
func (k *Keys) PublicKey(ctx context.Context) (string, error) {
	s, err := k.Signer(ctx)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey()))) + " proxmops", nil
}

// Pin is a guest's host key as first seen.
type Pin struct {
	VMID        int       `json:"vmid"`
	Key         string    `json:"key"` // authorized_keys form
	Fingerprint string    `json:"fingerprint"`
	Address     string    `json:"address"`
	Pinned      time.Time `json:"pinned"`
}

func pinKey(id string) string { return "provision/hostkey/" + id }

// HostKey returns the pinned host key of a guest ("Kind/name").
func (k *Keys) HostKey(ctx context.Context, id string) (Pin, bool, error) {
	b, ok, err := k.store.State(ctx, pinKey(id))
	if err != nil || !ok {
		return Pin{}, false, err
	}
	var p Pin
	if err := json.Unmarshal(b, &p); err != nil {
		return Pin{}, false, fmt.Errorf("pinned host key of %s: %w", id, err)
	}
	return p, true, nil
}

// ResetHostKey forgets a guest's pinned host key: the next contact pins
// what the guest offers.
func (k *Keys) ResetHostKey(ctx context.Context, id string) error {
	return k.store.DeleteState(ctx, pinKey(id))
}

// HostKeyError is a guest offering another host key than the pinned one.
type HostKeyError struct {
	ID, Address string
	Pinned      Pin
	Offered     string // fingerprint
}

func (e *HostKeyError) Error() string {
	kind, name, _ := vocab.SplitKey(e.ID)
	return fmt.Sprintf("host key of %s at %s changed: pinned %s on %s, offered %s; provisioning stops until the guest is recreated or the pin is reset (DELETE /api/v1/resources/%s/%s/hostkey) if the change is expected",
		e.ID, e.Address, e.Pinned.Fingerprint, e.Pinned.Pinned.UTC().Format(time.RFC3339), e.Offered, kind, name)
}

// hostKeyCallback pins the first host key a guest offers (trust on first
// use) and refuses any other one afterwards. A pin of another VMID (the
// name now stands for a recreated guest) is replaced.
func (k *Keys) hostKeyCallback(ctx context.Context, id string, vmid int) ssh.HostKeyCallback {
	return func(addr string, _ net.Addr, key ssh.PublicKey) error {
		return k.checkHostKey(ctx, id, vmid, addr, key)
	}
}

func (k *Keys) checkHostKey(ctx context.Context, id string, vmid int, addr string, key ssh.PublicKey) error {
	offered := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
	pin, ok, err := k.HostKey(ctx, id)
	if err != nil {
		return err
	}
	if ok && pin.VMID == vmid {
		if pin.Key == offered {
			return nil
		}
		return &HostKeyError{ID: id, Address: addr, Pinned: pin, Offered: ssh.FingerprintSHA256(key)}
	}
	return k.PinHostKey(ctx, id, Pin{VMID: vmid, Key: offered, Fingerprint: ssh.FingerprintSHA256(key), Address: addr, Pinned: time.Now().UTC()})
}

// PinHostKey records p as the host key of guest id.
func (k *Keys) PinHostKey(ctx context.Context, id string, p Pin) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return k.store.PutState(ctx, pinKey(id), b)
}

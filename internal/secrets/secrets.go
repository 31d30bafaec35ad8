package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the size of an AES-256 key.
const KeySize = 32

const (
	formatV1  = 1
	idSize    = 4
	nonceSize = 12
	header    = 1 + idSize + nonceSize
)

// Key is an AES-256 key.
type Key [KeySize]byte

// ErrWrongKey means the value was sealed with a key this Cipher lacks.
var ErrWrongKey = errors.New("sealed with a different encryption key")

// ErrTampered means the value or its associated data was changed.
var ErrTampered = errors.New("ciphertext was altered or belongs to another record")

// GenerateKey returns a new random key.
func GenerateKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return Key{}, fmt.Errorf("generate encryption key: %w", err)
	}
	return k, nil
}

// ParseKey reads a key written as base64 (standard or URL alphabet, padded
// or not) or as 64 hex digits.
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	var k Key
	if len(s) == 2*KeySize {
		if b, err := hex.DecodeString(s); err == nil {
			copy(k[:], b)
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return Key{}, fmt.Errorf("encryption key is %d bytes, want %d", len(b), KeySize)
			}
			copy(k[:], b)
			return k, nil
		}
	}
	return Key{}, errors.New("encryption key is neither base64 nor 64 hex digits (generate one with: head -c 32 /dev/urandom | base64)")
}

// String writes the key as standard base64: handle it as a secret.
func (k Key) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

// ID is a short public fingerprint of the key, safe to log.
func (k Key) ID() string {
	id := k.id()
	return hex.EncodeToString(id[:])
}

func (k Key) id() [idSize]byte {
	sum := sha256.Sum256(append([]byte("proxmops key id\x00"), k[:]...))
	var id [idSize]byte
	copy(id[:], sum[:idSize])
	return id
}

// Cipher seals with its primary key and opens with any of its keys.
type Cipher struct {
	primary Key
	aeads   map[[idSize]byte]cipher.AEAD
}

// NewCipher returns a Cipher sealing with primary and opening values sealed
// with primary or any of others.
func NewCipher(primary Key, others ...Key) (*Cipher, error) {
	c := &Cipher{primary: primary, aeads: map[[idSize]byte]cipher.AEAD{}}
	for _, k := range append([]Key{primary}, others...) {
		block, err := aes.NewCipher(k[:])
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		c.aeads[k.id()] = aead
	}
	return c, nil
}

// KeyID is the id of the key that seals.
func (c *Cipher) KeyID() string { return c.primary.ID() }

// Seal encrypts plaintext bound to aad (the record's identity).
func (c *Cipher) Seal(aad, plaintext []byte) ([]byte, error) {
	id := c.primary.id()
	out := make([]byte, header, header+len(plaintext)+16)
	out[0] = formatV1
	copy(out[1:], id[:])
	if _, err := rand.Read(out[1+idSize : header]); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	return c.aeads[id].Seal(out, out[1+idSize:header], plaintext, aad), nil
}

// Open decrypts a value sealed for aad. It returns ErrWrongKey when none of
// the Cipher's keys sealed it and ErrTampered when it does not authenticate.
func (c *Cipher) Open(aad, sealed []byte) ([]byte, error) {
	if len(sealed) < header+16 || sealed[0] != formatV1 {
		return nil, ErrTampered
	}
	var id [idSize]byte
	copy(id[:], sealed[1:])
	aead, ok := c.aeads[id]
	if !ok {
		return nil, fmt.Errorf("%w (key id %s; this key is %s)", ErrWrongKey, hex.EncodeToString(id[:]), c.KeyID())
	}
	pt, err := aead.Open(nil, sealed[1+idSize:header], sealed[header:], aad)
	if err != nil {
		return nil, ErrTampered
	}
	return pt, nil
}

// SealedKeyID tells which key sealed a value ("" when it is not one).
func SealedKeyID(sealed []byte) string {
	if len(sealed) < header || sealed[0] != formatV1 {
		return ""
	}
	return hex.EncodeToString(sealed[1 : 1+idSize])
}

// ReadKeyFile reads a key file. It refuses a file that others may read.
func ReadKeyFile(path string) (Key, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Key{}, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return Key{}, fmt.Errorf("key file %s has mode %04o: others could read it; run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, err
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return Key{}, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// WriteKeyFile writes k to path with mode 0600, atomically (through a
// temporary file renamed into place) and durably (synced).
func WriteKeyFile(path string, k Key) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return WritePrivateFile(path, k.String()+"\n")
}

// WritePrivateFile writes content to path with mode 0600, atomically
// (through a temporary file in the same directory, renamed into place) and
// durably (the file and its directory synced). The directory must exist.
func WritePrivateFile(path, content string) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".proxmops-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	_ = d.Sync() // not every file system can sync a directory
	return nil
}

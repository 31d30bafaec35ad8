package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
)

// Token prefixes tell what a token is when one turns up in a log or a chat.
const (
	PrefixSession = "pms_"
	PrefixAPI     = "pmt_"
	PrefixSetup   = "pmsetup_"
)

// NewToken returns a random 256-bit token with prefix and its hash, the
// only form stored.
func NewToken(prefix string) (token string, hash []byte) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // rand.Read never fails on supported systems
	}
	token = prefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token)
}

// HashToken is the stored form of a token. A fast hash is right here: the
// token has 256 bits of entropy, unlike a password.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// HasPrefix tells whether token looks like one of kind prefix.
func HasPrefix(token, prefix string) bool { return strings.HasPrefix(token, prefix) }

// CSRFToken derives the CSRF token of a session from its token, so nothing
// more is stored and a leaked CSRF token reveals nothing of the session.
func CSRFToken(sessionToken string) string {
	m := hmac.New(sha256.New, []byte(sessionToken))
	m.Write([]byte("proxmops csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckCSRF compares a presented CSRF token in constant time.
func CheckCSRF(sessionToken, presented string) bool {
	want := CSRFToken(sessionToken)
	return presented != "" && subtle.ConstantTimeCompare([]byte(want), []byte(presented)) == 1
}

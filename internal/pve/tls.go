package pve

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Fingerprint returns the SHA-256 fingerprint of a DER certificate in the
// colon-separated upper-case hex form Proxmox shows (AB:CD:...).
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	parts := make([]string, 0, len(sum))
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":")
}

// NormalizeFingerprint accepts a SHA-256 fingerprint with or without colons,
// in any case, and returns the canonical AB:CD:... form.
func NormalizeFingerprint(fp string) (string, error) {
	clean := strings.NewReplacer(":", "", " ", "", "-", "").Replace(strings.TrimSpace(fp))
	clean = strings.TrimPrefix(strings.TrimPrefix(clean, "sha256"), "SHA256")
	raw, err := hex.DecodeString(clean)
	if err != nil || len(raw) != sha256.Size {
		return "", fmt.Errorf("invalid SHA-256 fingerprint %q: want 32 bytes as hex, like AB:CD:...", fp)
	}
	h := strings.ToUpper(hex.EncodeToString(raw))
	parts := make([]string, 0, sha256.Size)
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":"), nil
}

func buildTLSConfig(cfg Config) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case cfg.Fingerprint != "":
		want, err := NormalizeFingerprint(cfg.Fingerprint)
		if err != nil {
			return nil, err
		}
		// The pin replaces chain and host name verification: self-signed
		// Proxmox certificates carry neither a trusted chain nor the name
		// users connect with.
		tc.InsecureSkipVerify = true
		tc.VerifyPeerCertificate = func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
			if len(rawCerts) == 0 {
				return &CertificateError{Expected: want, Actual: "(no certificate)"}
			}
			got := Fingerprint(rawCerts[0])
			if got != want {
				return &CertificateError{Expected: want, Actual: got}
			}
			return nil
		}
	case cfg.InsecureSkipVerify:
		tc.InsecureSkipVerify = true
	case cfg.CAFile != "":
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading caFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caFile %s holds no PEM certificate", cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// certificateError turns a TLS verification failure into a *CertificateError
// carrying the presented certificate's fingerprint, or returns nil.
func certificateError(err error) *CertificateError {
	var ce *CertificateError
	if errors.As(err, &ce) {
		return ce
	}
	var cve *tls.CertificateVerificationError
	if errors.As(err, &cve) {
		out := &CertificateError{Err: cve.Err}
		if len(cve.UnverifiedCertificates) > 0 {
			out.Actual = Fingerprint(cve.UnverifiedCertificates[0].Raw)
		}
		return out
	}
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		out := &CertificateError{Err: ua}
		if ua.Cert != nil {
			out.Actual = Fingerprint(ua.Cert.Raw)
		}
		return out
	case errors.As(err, &hn):
		out := &CertificateError{Err: hn}
		if hn.Certificate != nil {
			out.Actual = Fingerprint(hn.Certificate.Raw)
		}
		return out
	case errors.As(err, &ci):
		out := &CertificateError{Err: ci}
		if ci.Cert != nil {
			out.Actual = Fingerprint(ci.Cert.Raw)
		}
		return out
	}
	return nil
}

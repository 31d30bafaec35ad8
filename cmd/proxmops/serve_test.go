package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/testwait"
)

// background runs a long-running command (serve, sim) until the test ends
// and returns its stdout and stderr as they grow.
func background(t *testing.T, args ...string) (stdout, stderr *testwait.Buffer) {
	t.Helper()
	for _, c := range rootCmd.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			_ = f.Value.Set(f.DefValue)
			f.Changed = false
		})
	}
	sub, _, err := rootCmd.Find(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// cobra hands the root's context to a subcommand only once: set it on
	// the subcommand itself so each run gets its own.
	sub.SetContext(ctx)
	stdout, stderr = &testwait.Buffer{}, &testwait.Buffer{}
	rootCmd.SetOut(stdout)
	rootCmd.SetErr(stderr)
	done := make(chan int, 1)
	go func() { done <- run(args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("%s exited %d: %s", args[0], code, stderr)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("%s did not stop after its context ended", args[0])
		}
		rootCmd.SetOut(nil)
		rootCmd.SetErr(nil)
		sub.SetContext(context.Background())
	})
	return stdout, stderr
}

// waitFor polls buf until re matches and returns the submatches.
func waitFor(t *testing.T, buf *testwait.Buffer, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	if !testwait.Until(30*time.Second, func() bool { m = re.FindStringSubmatch(buf.String()); return m != nil }) {
		t.Fatalf("no line matching %s in:\n%s", re, buf)
	}
	return m
}

// testCert writes a certificate for 127.0.0.1 and its key, and returns a
// pool that trusts it.
func testCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "proxmops test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

var listeningRE = regexp.MustCompile(`HTTP server listening"? addr=(127\.0\.0\.1:\d+) tls=(\w+)`)

func TestServeOverHTTPSWithCertificateFlags(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := testCert(t, dir)
	t.Setenv("PROXMOPS_CONFIG", "")
	t.Setenv("PROXMOPS_SOURCE_CACHEDIR", t.TempDir())
	_, errOut := background(t, "serve", "--addr", "127.0.0.1:0", "--database", filepath.Join(dir, "p.db"),
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--log-format", "text")
	m := waitFor(t, errOut, listeningRE)
	if m[2] != "true" {
		t.Fatalf("serve listens without TLS: %s", m[0])
	}
	// The client verifies the certificate: no InsecureSkipVerify.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get("https://" + m[1] + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET /healthz over HTTPS: %s %q", resp.Status, body)
	}
	// Plain HTTP on the same port gets no page.
	plain, err := http.Get("http://" + m[1] + "/healthz")
	if err == nil {
		plain.Body.Close()
		if plain.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP answered 200 on the HTTPS port")
		}
	}
}

func TestServeRefusesHalfATLSPair(t *testing.T) {
	dir := t.TempDir()
	certFile, _, _ := testCert(t, dir)
	t.Setenv("PROXMOPS_CONFIG", "")
	code, _, errOut := runCLI(t, "serve", "--addr", "127.0.0.1:0", "--database", filepath.Join(dir, "p.db"), "--tls-cert-file", certFile)
	if code != 1 || !strings.Contains(errOut, "set both or neither") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestSimWithoutTokenFlagsPrintsAWorkingToken(t *testing.T) {
	out, _ := background(t, "sim", "--listen", "127.0.0.1:0", "--http", "--task-speed", "0")
	url := waitFor(t, out, regexp.MustCompile(`pvesim listening on (\S+)`))[1]
	tok := waitFor(t, out, regexp.MustCompile(`pvesim token (\S+) secret (\S+)`))
	if tok[1] != "root@pam!sim" || len(tok[2]) < 20 {
		t.Fatalf("token line %q", tok[0])
	}
	get := func(secret string) int {
		req, _ := http.NewRequest("GET", url+"/version", nil)
		req.Header.Set("Authorization", "PVEAPIToken="+tok[1]+"="+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(tok[2]); code != http.StatusOK {
		t.Fatalf("printed token: HTTP %d", code)
	}
	if code := get("wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong secret: HTTP %d, want 401", code)
	}
}

func TestHealthcheckFollowsTheServeConfiguration(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := testCert(t, dir)
	t.Setenv("PROXMOPS_CONFIG", "")
	t.Setenv("PROXMOPS_SOURCE_CACHEDIR", t.TempDir())
	// Through the environment, as the container image sets it.
	t.Setenv("PROXMOPS_SERVER_TLSCERTFILE", certFile)
	t.Setenv("PROXMOPS_SERVER_TLSKEYFILE", keyFile)
	_, errOut := background(t, "serve", "--addr", "127.0.0.1:0", "--database", filepath.Join(dir, "p.db"))
	addr := waitFor(t, errOut, listeningRE)[1]
	_, port, _ := net.SplitHostPort(addr)
	t.Setenv("PROXMOPS_SERVER_ADDR", ":"+port)
	if code, out, errs := runCLI(t, "healthcheck"); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("healthcheck of a running daemon: exit %d, %q %q", code, out, errs)
	}
	// Nothing listens on a fresh closed port: unhealthy.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := ln.Addr().String()
	ln.Close()
	if code, _, errs := runCLI(t, "healthcheck", "--addr", free); code != 1 || !strings.Contains(errs, "healthcheck") {
		t.Fatalf("healthcheck without a daemon: exit %d, %q", code, errs)
	}
}

func TestHealthURL(t *testing.T) {
	tests := []struct {
		addr, cert, want string
	}{
		{":8080", "", "http://127.0.0.1:8080/healthz"},
		{"0.0.0.0:9000", "c.pem", "https://127.0.0.1:9000/healthz"},
		{"[::]:8080", "", "http://[::1]:8080/healthz"},
		{"127.0.0.2:8080", "", "http://127.0.0.2:8080/healthz"},
	}
	for _, tt := range tests {
		got, err := healthURL(config.Server{Addr: tt.addr, TLSCertFile: tt.cert})
		if err != nil || got != tt.want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", tt.addr, got, err, tt.want)
		}
	}
	if _, err := healthURL(config.Server{Addr: "8080"}); err == nil {
		t.Error("an address without a port gave no error")
	}
}

package check

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/pve"
)

// connect reports the settings, the certificate and the API version, and
// returns a client when the API answered (nil otherwise).
func (r *report) connect(ctx context.Context, o Options) *pve.Client {
	cl := o.Config.Cluster
	var missing []string
	for _, f := range []struct{ key, val string }{{"endpoint", cl.Endpoint}, {"tokenId", cl.TokenID}, {"tokenSecret", cl.TokenSecret}} {
		if f.val == "" {
			missing = append(missing, o.key(f.key))
		}
	}
	if len(missing) > 0 {
		r.fail("cluster: connection", "the Proxmox VE cluster is not configured: "+strings.Join(missing, ", ")+" not set",
			"set them in the configuration file, the environment (PROXMOPS_CLUSTER_…) or the settings page")
		return nil
	}
	endpoint, _, err := config.NormalizeEndpoint(cl.Endpoint)
	if err != nil {
		r.fail("cluster: connection", err.Error(), "set "+o.key("endpoint")+" to https://HOST:8006")
		return nil
	}
	u, _ := url.Parse(endpoint)
	if u.Scheme == "https" {
		if !r.certificate(ctx, o, u) {
			return nil
		}
	} else if !isLoopback(u.Hostname()) {
		r.warn("cluster: tls", "the endpoint uses plain http: the API token travels unencrypted",
			"use https://"+u.Hostname()+":8006 (Proxmox VE serves its API over https only)")
	}
	pc := pve.Config{Endpoint: endpoint, TokenID: cl.TokenID, TokenSecret: cl.TokenSecret,
		CAFile: cl.CAFile, Fingerprint: cl.Fingerprint, InsecureSkipVerify: cl.InsecureSkipVerify}
	if o.AdjustClient != nil {
		o.AdjustClient(&pc)
	}
	client, err := pve.New(pc)
	if err != nil {
		r.fail("cluster: connection", err.Error(), "correct the cluster settings")
		return nil
	}
	ver, err := client.Version(ctx)
	if err != nil {
		client.Close()
		r.fail("cluster: version", "GET /version: "+err.Error(), fixForError(err, o))
		return nil
	}
	level, fix := versionLevel(ver.Version)
	msg := "Proxmox VE " + ver.Version + " at " + u.Host
	if level == "" {
		r.ok("cluster: version", msg)
	} else {
		r.warn("cluster: version", msg+": proxmops is built and tested for 8.4 to 9.x", fix)
	}
	return client
}

// fixForError says what to do about a failed API call.
func fixForError(err error, o Options) string {
	var ae *pve.APIError
	if errors.As(err, &ae) {
		switch ae.StatusCode {
		case 401:
			return "the token was refused: check " + o.key("tokenId") + " (USER@REALM!NAME) and its secret, and that the token has not expired"
		case 403:
			return "grant the token the privilege the answer names"
		case 595, 596:
			return "the node does not answer: check that it is up and in the cluster"
		}
	}
	return "check that " + o.key("endpoint") + " is the address of a Proxmox VE node and that it is reachable from here"
}

// versionLevel is "" for a version proxmops supports (8.4 to 9.x), or
// WARN with what to do.
func versionLevel(v string) (string, string) {
	major, minor, ok := parseVersion(v)
	switch {
	case !ok:
		return "WARN", "report the version string in an issue: proxmops cannot read it"
	case major < 8 || major == 8 && minor < 4:
		return "WARN", "upgrade the cluster to Proxmox VE 8.4 or later"
	case major > 9:
		return "WARN", "run `proxmops check --exercise` on a test node before trusting it with this version"
	}
	return "", ""
}

func parseVersion(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	var err1, err2 error
	major, err1 = strconv.Atoi(parts[0])
	minor, err2 = strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return major, minor, err1 == nil && err2 == nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// certificate reports the server certificate: its fingerprint, and
// whether it is pinned, trusted or not checked. False when the connection
// cannot go on.
func (r *report) certificate(ctx context.Context, o Options, u *url.URL) bool {
	cl := o.Config.Cluster
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// Fetch the certificate without judging it; the judgement follows.
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}} //nolint:gosec // only reads the certificate
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		r.fail("cluster: tls", "cannot reach "+addr+": "+err.Error(), "check "+o.key("endpoint")+", the network path and that pveproxy runs on the node")
		return false
	}
	state := conn.(*tls.Conn).ConnectionState()
	conn.Close()
	if len(state.PeerCertificates) == 0 {
		r.fail("cluster: tls", addr+" presented no certificate", "check that "+addr+" is pveproxy")
		return false
	}
	leaf := state.PeerCertificates[0]
	fp := pve.Fingerprint(leaf.Raw)
	pin := o.pinLine(fp)
	switch {
	case cl.Fingerprint != "":
		want, err := pve.NormalizeFingerprint(cl.Fingerprint)
		if err != nil {
			r.fail("cluster: tls", err.Error(), "set "+pin+" after comparing it with the node's (pvenode cert info)")
			return false
		}
		if want != fp {
			r.fail("cluster: tls", "the certificate's fingerprint is "+fp+", but "+o.key("fingerprint")+" pins "+want,
				"if the node's certificate was renewed on purpose (compare with pvenode cert info on the node), set "+pin)
			return false
		}
		r.ok("cluster: tls", "certificate pinned: fingerprint "+fp+" matches "+o.key("fingerprint"))
	case cl.InsecureSkipVerify:
		r.warn("cluster: tls", "certificate not verified ("+o.key("insecureSkipVerify")+"); it presents fingerprint "+fp,
			trustFix(o, pin)+"; then remove insecureSkipVerify")
	default:
		roots, err := rootsOf(cl.CAFile)
		if err != nil {
			r.fail("cluster: tls", err.Error(), "point "+o.key("caFile")+" at a PEM bundle, or pin the certificate: "+pin)
			return false
		}
		inter := x509.NewCertPool()
		for _, c := range state.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: u.Hostname()}); err != nil {
			r.fail("cluster: tls", "the certificate (fingerprint "+fp+") is not trusted: "+err.Error(), trustFix(o, pin))
			return false
		}
		by := "the system's certificate authorities"
		if cl.CAFile != "" {
			by = o.key("caFile")
		}
		r.ok("cluster: tls", "certificate trusted by "+by+"; fingerprint "+fp)
	}
	return true
}

// rootsOf is the CA pool of caFile, nil for the system's.
func rootsOf(caFile string) (*x509.CertPool, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading caFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("caFile %s holds no PEM certificate", caFile)
	}
	return pool, nil
}

// pinLine is the configuration line that pins fp, where it goes, and the
// environment variable that does the same for the single cluster.
func (o Options) pinLine(fp string) string {
	line := fmt.Sprintf("fingerprint: %q", fp)
	if o.Name == "" || o.Name == config.DefaultClusterName {
		return line + " under cluster: in the configuration file (or PROXMOPS_CLUSTER_FINGERPRINT=" + fp + ")"
	}
	return line + " in the clusters: entry named " + o.Name
}

// trustFix says how to trust a node's certificate: the cluster's own CA,
// which survives certificate renewals, or a pin of this certificate.
func trustFix(o Options, pin string) string {
	return "trust the cluster's CA: copy /etc/pve/pve-root-ca.pem from a node and set " + o.key("caFile") +
		" to it (it survives certificate renewals); or pin this certificate after comparing the fingerprint with the node's (pvenode cert info): set " + pin
}

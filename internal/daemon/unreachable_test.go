package daemon

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// unreachableInterval is reconcile.interval of the outage tests: what the
// daemon shows must turn within two of them.
const unreachableInterval = 3 * time.Second

// simFront serves a simulator on one fixed loopback address that the test
// takes down and brings back (the cluster killed and restarted), over
// HTTPS with a certificate the test can replace (a renewal).
type simFront struct {
	t    *testing.T
	sim  *pvesim.Server
	addr string
	mu   sync.Mutex
	srv  *http.Server
	cert *tls.Certificate // nil: plain HTTP
}

func newSimFront(t *testing.T, cert *tls.Certificate) *simFront {
	sim := pvesim.New(pvesim.Options{Nodes: 3, TokenID: chaosTokenID, TokenSecret: chaosTokenSecret, TaskSpeed: 0.05, Seed: 1, StatusInterval: -1})
	t.Cleanup(func() { sim.Close() })
	f := &simFront{t: t, sim: sim, addr: "127.0.0.1:0", cert: cert}
	f.up()
	t.Cleanup(f.down)
	return f
}

func (f *simFront) url() string {
	scheme := "http"
	if f.cert != nil {
		scheme = "https"
	}
	return scheme + "://" + f.addr + "/api2/json"
}

func (f *simFront) up() {
	f.mu.Lock()
	defer f.mu.Unlock()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		f.t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	if f.cert != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*f.cert}, MinVersion: tls.VersionTLS12})
	}
	f.srv = &http.Server{Handler: f.sim, ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(ln)
}

// down closes the listener and every connection: the API is gone.
func (f *simFront) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		f.srv.Close()
		f.srv = nil
	}
}

// renew serves cert from now on, as after `pvecm updatecerts`.
func (f *simFront) renew(cert *tls.Certificate) {
	f.down()
	f.cert = cert
	f.up()
}

// selfSigned makes a certificate for 127.0.0.1 and its SHA-256 pin.
func selfSigned(t *testing.T) (*tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "pve1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pve.Fingerprint(der)
}

// outageRun is a daemon in-process on a Git repository of VMs and the
// simulator behind front.
type outageRun struct {
	*chaosRun
	front  *simFront
	daemon *runningDaemon
}

func startOutageRun(t *testing.T, front *simFront, fingerprint string) *outageRun {
	r := &outageRun{chaosRun: &chaosRun{t: t, sim: front.sim, dir: t.TempDir(), cores: map[int]string{}}, front: front}
	r.initRepo()
	r.createToken()
	token := filepath.Join(r.dir, "token")
	if err := os.WriteFile(token, []byte(chaosTokenSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`cluster:
  endpoint: %s
  tokenId: "%s"
  tokenSecretFile: %s
  fingerprint: "%s"
source:
  repoURL: file://%s
  revision: main
  cacheDir: %s
reconcile:
  interval: %s
server:
  databasePath: %s
`, front.url(), chaosTokenID, token, fingerprint, filepath.ToSlash(filepath.Join(r.dir, "repo")),
		filepath.Join(r.dir, "git-cache"), unreachableInterval, filepath.Join(r.dir, "proxmops.db"))
	cfgFile := filepath.Join(r.dir, "proxmops.yaml")
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(config.LoadOptions{File: cfgFile, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.daemon, err = startDaemonWith(t, cfg); err != nil {
		t.Fatal(err)
	}
	r.apiURL = "http://" + r.daemon.addr
	return r
}

// get reads one of the daemon's documents.
func (r *outageRun) get(path string) (int, []byte) {
	req, _ := http.NewRequest("GET", r.apiURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return resp.StatusCode, []byte(b.String())
}

func (r *outageRun) resources() api.ResourceList {
	_, b := r.get("/api/v1/resources")
	var l api.ResourceList
	if err := json.Unmarshal(b, &l); err != nil {
		r.t.Fatalf("resources: %v: %s", err, b)
	}
	return l
}

func (r *outageRun) readiness() (int, map[string]any) {
	code, b := r.get("/readyz")
	doc := map[string]any{}
	json.Unmarshal(b, &doc)
	return code, doc
}

// metric is the value of one series of /metrics ("" when absent).
func (r *outageRun) metric(series string) string {
	_, b := r.get("/metrics")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// waitWithin waits for ok, failing when it takes longer than limit.
func (r *outageRun) waitWithin(what string, limit time.Duration, ok func() bool) time.Duration {
	r.t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > limit {
			l := r.resources()
			code, ready := r.readiness()
			r.t.Fatalf("not %s within %s; clusterError=%q sourceError=%q readyz %d %v up=%q resources: %+v", what, limit,
				l.ClusterError, l.SourceError, code, ready, r.metric(`proxmops_cluster_up{cluster="default"}`), l.Resources)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

const upSeries = `proxmops_cluster_up{cluster="default"}`

// healthy: every declared VM Synced, the cluster up, the daemon ready.
func (r *outageRun) healthy(vms int) func() bool {
	return func() bool {
		l := r.resources()
		synced := 0
		for _, res := range l.Resources {
			if res.Status == vocab.StatusSynced && res.Progress == nil {
				synced++
			}
		}
		code, ready := r.readiness()
		return synced == vms && len(l.Resources) == vms && l.ClusterError == "" && l.LastObserved != nil &&
			r.metric(upSeries) == "1" && code == 200 && ready["status"] == "ready"
	}
}

// unobserved: every resource Unknown for want (the last observation kept
// with its time for the ones observed before), the cluster error apart from
// the source's, the gauge 0 and readiness degraded.
func (r *outageRun) unobserved(want string, vms int) func() bool {
	return func() bool {
		l := r.resources()
		if len(l.Resources) != vms || l.SourceError != "" || !strings.Contains(l.ClusterError, want) {
			return false
		}
		for _, res := range l.Resources {
			if res.Status != vocab.StatusUnknown || !strings.HasPrefix(res.Reason, "cluster unreachable: ") || !strings.Contains(res.Reason, want) {
				return false
			}
		}
		code, ready := r.readiness()
		return r.metric(upSeries) == "0" && code == 200 && ready["status"] == "degraded" &&
			fmt.Sprint(ready["clusters"]) == "[default]" && !strings.Contains(fmt.Sprint(ready), want)
	}
}

func TestClusterKilledUnderARunningDaemonTurnsResourcesUnknownTheGaugeZeroAndReadinessDegraded(t *testing.T) {
	front := newSimFront(t, nil)
	r := startOutageRun(t, front, "")
	r.waitWithin("synced at first", 90*time.Second, r.healthy(chaosVMs))
	r.waitWithin("a pass that read the created VMs", 3*unreachableInterval, func() bool {
		_, b := r.get("/api/v1/resources/VirtualMachine/chaos-0")
		return strings.Contains(string(b), `"observed":{`)
	})
	if r.metric(`proxmops_last_successful_observation_timestamp_seconds{cluster="default"}`) == "" {
		t.Fatal("no last observation timestamp after a good pass")
	}

	front.down()
	took := r.waitWithin("Unknown after the cluster went down", 2*unreachableInterval, r.unobserved("observing the cluster failed", chaosVMs))
	t.Logf("Unknown %.1fs after the cluster went down", took.Seconds())
	// A pass that read the cluster just before it went down may end after
	// that: the timestamp stands still from the first failed one on.
	observed := r.metric(`proxmops_last_successful_observation_timestamp_seconds{cluster="default"}`)
	for _, res := range r.resources().Resources {
		if res.LastObserved == nil {
			t.Fatalf("%s/%s: the last observation's time is not shown", res.Kind, res.Name)
		}
	}
	if _, b := r.get("/api/v1/resources/VirtualMachine/chaos-0"); !strings.Contains(string(b), `"observed":{`) {
		t.Fatalf("the last observation is not kept: %s", b)
	}

	// A commit pushed during the outage shows its new VM, never observed.
	r.repo.Commit("one more VM", map[string]string{"vms/chaos-9.yaml": chaosManifest(9, "1")})
	r.waitWithin("the new commit's VM shown while the cluster is down", 3*unreachableInterval, r.unobserved("observing the cluster failed", chaosVMs+1))
	for _, res := range r.resources().Resources {
		if res.Name == "chaos-9" && res.LastObserved != nil {
			t.Fatalf("a VM never observed has a last observation: %+v", res)
		}
	}
	if got := r.metric(`proxmops_last_successful_observation_timestamp_seconds{cluster="default"}`); got != observed {
		t.Fatalf("the last observation moved during the outage: %s then %s", observed, got)
	}

	front.up()
	r.waitWithin("healthy again after the cluster came back", 60*time.Second, r.healthy(chaosVMs+1))
	if _, ok := front.sim.Guest(509); !ok {
		t.Fatal("the VM of the commit pushed during the outage was not created")
	}
}

func TestAPinMismatchTurnsResourcesUnknownAndBackWhenTheCertificateIsTheOnePinned(t *testing.T) {
	pinned, fp := selfSigned(t)
	renewed, _ := selfSigned(t)
	front := newSimFront(t, pinned)
	r := startOutageRun(t, front, fp)
	r.waitWithin("synced at first", 90*time.Second, r.healthy(chaosVMs))

	front.renew(renewed)
	took := r.waitWithin("Unknown after the certificate changed", 2*unreachableInterval, r.unobserved("fingerprint", chaosVMs))
	t.Logf("Unknown %.1fs after the certificate changed", took.Seconds())

	front.renew(pinned)
	r.waitWithin("healthy again with the pinned certificate", 60*time.Second, r.healthy(chaosVMs))
}

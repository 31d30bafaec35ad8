package source

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/proxmops/proxmops/internal/sshtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshGitServer is a loopback SSH server that answers git-upload-pack for
// one repository with go-git's server package, accepting one client key.
type sshGitServer struct {
	addr    string
	hostKey ssh.PublicKey
	ln      net.Listener
	wg      sync.WaitGroup
}

func newKey(t *testing.T) (ssh.Signer, []byte) {
	t.Helper()
	signer, priv := sshtest.NewKey(t)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return signer, pem.EncodeToMemory(block)
}

func startSSHGitServer(t *testing.T, repo *git.Repository, clientKey ssh.PublicKey) *sshGitServer {
	t.Helper()
	hostSigner, _ := newKey(t)
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if string(key.Marshal()) == string(clientKey.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sshGitServer{addr: ln.Addr().String(), hostKey: hostSigner.PublicKey(), ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serveConn(conn, cfg, repo)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *sshGitServer) serveConn(conn net.Conn, cfg *ssh.ServerConfig, repo *git.Repository) {
	sshtest.ServeSessions(conn, cfg, func(ch ssh.Channel, chReqs <-chan *ssh.Request) {
		defer ch.Close()
		for req := range chReqs {
			if req.Type != "exec" {
				req.Reply(false, nil)
				continue
			}
			var payload struct{ Command string }
			_ = ssh.Unmarshal(req.Payload, &payload)
			req.Reply(true, nil)
			status := uint32(0)
			if !strings.HasPrefix(payload.Command, "git-upload-pack") {
				fmt.Fprintln(ch.Stderr(), "only git-upload-pack")
				status = 1
			} else if err := uploadPack(ch, repo); err != nil {
				status = 1
			}
			ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
			return
		}
	})
}

// uploadPack speaks git-upload-pack over a stream, as git does over SSH.
func uploadPack(rw io.ReadWriter, repo *git.Repository) error {
	srv := server.NewServer(singleLoader{repo.Storer})
	ep, _ := transport.NewEndpoint("/repo")
	sess, err := srv.NewUploadPackSession(ep, nil)
	if err != nil {
		return err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferences()
	if err != nil {
		return err
	}
	if err := ar.Encode(rw); err != nil {
		return err
	}
	req := packp.NewUploadPackRequest()
	if err := req.Decode(rw); err != nil {
		return nil // the client only listed refs
	}
	resp, err := sess.UploadPack(context.Background(), req)
	if err != nil {
		return err
	}
	defer resp.Close()
	return resp.Encode(rw)
}

func TestSSHKeyAndKnownHosts(t *testing.T) {
	r := newTestRepo(t)
	r.Commit("one", map[string]string{"m/a.yaml": "ssh"})
	clientSigner, clientPEM := newKey(t)
	srv := startSSHGitServer(t, r.Git, clientSigner.PublicKey())
	url := "ssh://git@" + srv.addr + "/you/homelab.git"

	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(srv.addr)}, srv.hostKey)
	if err := os.WriteFile(known, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	otherHost, _ := newKey(t)
	wrongKnown := filepath.Join(dir, "wrong_known_hosts")
	if err := os.WriteFile(wrongKnown, []byte(knownhosts.Line([]string{knownhosts.Normalize(srv.addr)}, otherHost.PublicKey())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, otherClientPEM := newKey(t)

	tests := []struct {
		name string
		auth Auth
		kind Kind // "" for success
	}{
		{"known host", Auth{SSHKey: clientPEM, KnownHostsFile: known}, ""},
		{"insecure ignore host key", Auth{SSHKey: clientPEM, InsecureIgnoreHostKey: true}, ""},
		{"host key mismatch", Auth{SSHKey: clientPEM, KnownHostsFile: wrongKnown}, ErrHostKey},
		{"key not authorised", Auth{SSHKey: otherClientPEM, KnownHostsFile: known}, ErrAuth},
		{"not a key", Auth{SSHKey: []byte("garbage"), KnownHostsFile: known}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSyncerT(t, Options{URL: url, Path: "m", Auth: tt.auth})
			res, err := s.Sync(ctxT(t))
			if tt.kind == "" {
				if err != nil {
					t.Fatal(err)
				}
				if readFile(t, filepath.Join(res.Dir, "a.yaml")) != "ssh" {
					t.Fatal("wrong content")
				}
				return
			}
			if !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want kind %q", err, tt.kind)
			}
		})
	}
}

// Under the hardened unit the service's home has no ~/.ssh and most hosts no
// /etc/ssh/ssh_known_hosts: the error names the setting to give, not
// go-git's SSH_KNOWN_HOSTS variable alone.
func TestSSHWithoutAnyKnownHostsFileNamesTheSetting(t *testing.T) {
	if _, err := os.Stat("/etc/ssh/ssh_known_hosts"); err == nil {
		t.Skip("this machine has /etc/ssh/ssh_known_hosts, which go-git reads")
	}
	r := newTestRepo(t)
	r.Commit("one", map[string]string{"m/a.yaml": "ssh"})
	clientSigner, clientPEM := newKey(t)
	srv := startSSHGitServer(t, r.Git, clientSigner.PublicKey())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("SSH_KNOWN_HOSTS", "")
	s := newSyncerT(t, Options{URL: "ssh://git@" + srv.addr + "/you/homelab.git", Path: "m", Auth: Auth{SSHKey: clientPEM}})
	_, err := s.Sync(ctxT(t))
	if !errors.Is(err, ErrHostKey) || !strings.Contains(err.Error(), "source.knownHostsFile") {
		t.Fatalf("err = %v, want a host-key error naming source.knownHostsFile", err)
	}
}

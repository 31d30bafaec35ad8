// Package sshtest holds what the tests of SSH clients share: fresh keys and
// the server loop that hands out session channels.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"testing"

	"golang.org/x/crypto/ssh"
)

// NewKey is a fresh ed25519 key: its signer and the private key itself.
func NewKey(t testing.TB) (ssh.Signer, ed25519.PrivateKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return signer, priv
}

// ServeSessions makes the server's side of the handshake on conn with cfg,
// then hands each session channel to session in a goroutine of its own and
// refuses other channel types, until the client goes; it closes conn.
func ServeSessions(conn net.Conn, cfg *ssh.ServerConfig, session func(ssh.Channel, <-chan *ssh.Request)) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "no")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go session(ch, chReqs)
	}
}

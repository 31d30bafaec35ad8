package source

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

// Auth holds the credentials for the repository.
type Auth struct {
	// Username goes with Token over HTTPS; default DefaultUsername.
	Username string
	// Token is the HTTPS password or access token.
	Token string
	// SSHKey is a PEM or OpenSSH private key without passphrase.
	SSHKey []byte
	// KnownHostsFile lists accepted SSH host keys; empty means
	// $SSH_KNOWN_HOSTS, ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts.
	KnownHostsFile string
	// InsecureIgnoreHostKey accepts any SSH host key.
	InsecureIgnoreHostKey bool
}

// DefaultUsername is sent with a token when no username is configured.
const DefaultUsername = "x-access-token"

// method returns the go-git auth for a URL, or nil for none. mainURL is the
// configured repository: a token is only sent to its host, never to a
// submodule elsewhere.
func (a Auth) method(rawURL, mainURL string) (transport.AuthMethod, error) {
	switch {
	case strings.HasPrefix(rawURL, "https://") || strings.HasPrefix(rawURL, "http://"):
		if a.Token == "" || (rawURL != mainURL && !sameHost(rawURL, mainURL)) {
			return nil, nil
		}
		user := a.Username
		if user == "" {
			user = DefaultUsername
		}
		return &githttp.BasicAuth{Username: user, Password: a.Token}, nil
	case strings.HasPrefix(rawURL, "ssh://") || isScpLike(rawURL):
		user := sshUser(rawURL)
		var cb ssh.HostKeyCallback
		switch {
		case a.InsecureIgnoreHostKey:
			cb = ssh.InsecureIgnoreHostKey() // #nosec: explicitly configured
		case a.KnownHostsFile != "":
			var err error
			cb, err = gitssh.NewKnownHostsCallback(a.KnownHostsFile)
			if err != nil {
				return nil, &Error{Kind: ErrInvalid, Detail: "source.knownHostsFile", Err: err}
			}
		}
		if len(a.SSHKey) == 0 {
			if os.Getenv("SSH_AUTH_SOCK") == "" {
				// go-git would fail later with "SSH agent requested but
				// SSH_AUTH_SOCK not-specified", which names neither setting.
				return nil, &Error{Kind: ErrInvalid, Detail: "an SSH URL needs a key: set source.sshKeyFile (a deploy key without passphrase) or paste the key under Settings, or run proxmops with an SSH agent (SSH_AUTH_SOCK)"}
			}
			if cb == nil {
				return nil, nil // go-git's default: the SSH agent and default known_hosts
			}
			agentAuth, err := gitssh.NewSSHAgentAuth(user)
			if err != nil {
				return nil, &Error{Kind: ErrInvalid, Detail: "no SSH key configured (source.sshKeyFile) and no SSH agent", Err: err}
			}
			agentAuth.HostKeyCallback = cb
			return agentAuth, nil
		}
		keys, err := gitssh.NewPublicKeys(user, a.SSHKey, "")
		if err != nil {
			detail := "source.sshKey is not a usable private key"
			if strings.Contains(err.Error(), "passphrase") {
				detail = "the SSH key is protected by a passphrase; proxmops needs a key without one (a deploy key)"
			}
			return nil, &Error{Kind: ErrInvalid, Detail: detail, Err: err}
		}
		if cb != nil {
			keys.HostKeyCallback = cb
		}
		return keys, nil
	}
	return nil, nil
}

// sshUser is the user of an ssh:// or scp-like URL, default "git".
func sshUser(raw string) string {
	if strings.Contains(raw, "://") {
		if u, err := url.Parse(raw); err == nil && u.User != nil && u.User.Username() != "" {
			return u.User.Username()
		}
		return "git"
	}
	if at := strings.IndexByte(raw, '@'); at > 0 && at < strings.IndexByte(raw, ':') {
		return raw[:at]
	}
	return "git"
}

// String describes the credentials without revealing them.
func (a Auth) String() string {
	var parts []string
	if a.Token != "" {
		parts = append(parts, fmt.Sprintf("token for user %q", a.Username))
	}
	if len(a.SSHKey) > 0 {
		parts = append(parts, "SSH key")
	}
	if len(parts) == 0 {
		return "no credentials"
	}
	return strings.Join(parts, ", ")
}

package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// locationKind says how a repoURL is read.
type locationKind int

const (
	remoteRepo locationKind = iota // fetched with go-git (https, ssh, git, file)
	localDir                       // a directory read in place
)

// isScpLike reports Git's scp-like syntax, [user@]host:path: a colon before
// the first slash.
func isScpLike(s string) bool {
	if strings.Contains(s, "://") {
		return false
	}
	colon := strings.IndexByte(s, ':')
	if colon <= 0 {
		return false
	}
	slash := strings.IndexByte(s, '/')
	return slash < 0 || colon < slash
}

// classifyLocation decides how raw is read and returns the normalised URL
// (file:// for a bare repository on disk, an absolute path for a local
// directory).
func classifyLocation(raw string) (locationKind, string, error) {
	if raw == "" {
		return 0, "", fmt.Errorf("source.repoURL is empty")
	}
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return 0, "", fmt.Errorf("%q is not a URL: %v", raw, err)
		}
		switch u.Scheme {
		case "https", "http", "ssh", "git":
			if u.Host == "" {
				return 0, "", fmt.Errorf("%q has no host", raw)
			}
			return remoteRepo, raw, nil
		case "file":
			if u.Host != "" && u.Host != "localhost" {
				return 0, "", fmt.Errorf("%q: a file:// URL must not name a host", raw)
			}
			return remoteRepo, "file://" + u.Path, nil
		default:
			return 0, "", fmt.Errorf("scheme %q is not supported; use https, http, ssh, git, file or a local directory", u.Scheme)
		}
	}
	if isScpLike(raw) {
		return remoteRepo, raw, nil
	}
	p := raw
	if strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return 0, "", err
		}
		p = filepath.Join(home, p[2:])
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return 0, "", err
	}
	if isBareRepo(abs) {
		return remoteRepo, "file://" + filepath.ToSlash(abs), nil
	}
	return localDir, abs, nil
}

// isBareRepo reports a bare Git repository: HEAD, objects and refs, no
// work tree to read in place.
func isBareRepo(dir string) bool {
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// resolveSubmoduleURL resolves a submodule URL from .gitmodules against the
// URL of the repository that holds it, as git does: "./x" and "../x" are
// relative to the parent's URL (each "../" drops one path element);
// anything else is used as it is.
func resolveSubmoduleURL(parent, sub string) (string, error) {
	if !strings.HasPrefix(sub, "./") && !strings.HasPrefix(sub, "../") {
		return sub, nil
	}
	base := strings.TrimSuffix(parent, "/")
	prefix := ""
	switch {
	case strings.Contains(base, "://"):
		u, err := url.Parse(base)
		if err != nil {
			return "", err
		}
		prefix = u.Scheme + "://"
		if u.User != nil {
			prefix += u.User.String() + "@"
		}
		prefix += u.Host
		base = u.Path
	case isScpLike(base):
		i := strings.IndexByte(base, ':')
		prefix, base = base[:i+1], base[i+1:]
	}
	rel := sub
	for {
		switch {
		case strings.HasPrefix(rel, "./"):
			rel = rel[2:]
			continue
		case strings.HasPrefix(rel, "../"):
			rel = rel[3:]
			i := strings.LastIndexByte(base, '/')
			if base == "" || base == "/" {
				return "", fmt.Errorf("submodule URL %q goes above the root of %q", sub, parent)
			}
			if i < 0 {
				base = ""
			} else {
				base = base[:i]
			}
			continue
		}
		break
	}
	var joined string
	switch {
	case base == "":
		joined = rel
	case strings.HasSuffix(base, "/"):
		joined = base + rel
	default:
		joined = base + "/" + rel
	}
	if prefix == "" {
		return path.Clean(joined), nil
	}
	if strings.HasSuffix(prefix, "://") || strings.HasSuffix(prefix, ":") {
		return prefix + joined, nil // file:///x, host:x
	}
	if !strings.HasPrefix(joined, "/") {
		joined = "/" + joined
	}
	return prefix + joined, nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// cacheDirName names the cache directory of (url, revision): a readable
// slug and a hash of both, so a different URL never reuses another
// repository's clone.
func cacheDirName(repoURL, revision, purpose string) string {
	sum := sha256.Sum256([]byte(purpose + "\x00" + repoURL + "\x00" + revision))
	name := strings.TrimSuffix(path.Base(strings.TrimRight(strings.ReplaceAll(repoURL, ":", "/"), "/")), ".git")
	slug := unsafeChars.ReplaceAllString(name, "-")
	if revision != "" {
		slug += "-" + unsafeChars.ReplaceAllString(revision, "-")
	}
	if len(slug) > 48 {
		slug = slug[:48]
	}
	slug = strings.Trim(slug, "-.")
	if slug == "" {
		slug = "repo"
	}
	return slug + "-" + hex.EncodeToString(sum[:8])
}

// sameHost reports whether two URLs name the same scheme and host, so a
// token for one may be sent to the other.
func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil || !strings.Contains(a, "://") || !strings.Contains(b, "://") {
		return false
	}
	return ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host)
}

package demo

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/proxmops/proxmops/pvesim"
)

// fileServer serves small stand-ins for the images, ISOs and container
// templates the example manifests download, on loopback. Each file's
// content follows from its name, so checksums stay valid across runs.
type fileServer struct {
	srv  *http.Server
	ln   net.Listener
	base string // http://127.0.0.1:PORT

	mu    sync.Mutex
	files map[string][]byte // URL path -> content
}

func newFileServer() (*fileServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fileServer{ln: ln, base: "http://" + ln.Addr().String(), files: map[string][]byte{}}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(ln)
	return f, nil
}

func (f *fileServer) close() { f.srv.Close() }

func (f *fileServer) serve(w http.ResponseWriter, r *http.Request) {
	// Paths are registered as the manifests spell them: look a request up
	// by its escaped path (20241201_13%3A00) first.
	f.mu.Lock()
	data, ok := f.files[r.URL.EscapedPath()]
	if !ok {
		data, ok = f.files[r.URL.Path]
	}
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, r.URL.Path, time.Time{}, bytes.NewReader(data))
}

// register makes path servable and returns its content.
func (f *fileServer) register(path string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if data, ok := f.files[path]; ok {
		return data
	}
	data := fakeFile(path)
	f.files[path] = data
	return data
}

var (
	remoteURL = regexp.MustCompile(`https?://[^\s"'#]+`)
	localURL  = regexp.MustCompile(`^http://127\.0\.0\.1:\d+(/.*)$`)
	sourceKey = regexp.MustCompile(`^(\s*(?:-\s*)?source:\s*)(\S+)(.*)$`)
	algoKey   = regexp.MustCompile(`^\s*algo:\s*([a-z0-9]+)`)
	valueKey  = regexp.MustCompile(`^(\s*value:\s*)([0-9a-fA-F]+)(.*)$`)
)

// rewrite points every download URL of a manifest at this server and
// replaces the checksum that follows a URL with the served file's.
func (f *fileServer) rewrite(manifest []byte) []byte {
	lines := strings.Split(string(manifest), "\n")
	var current []byte // content of the last URL seen
	algo := ""
	for i, line := range lines {
		if m := sourceKey.FindStringSubmatch(line); m != nil && remoteURL.MatchString(m[2]) {
			path := urlPath(m[2])
			current = f.register(path)
			lines[i] = m[1] + f.base + path + m[3]
			algo = ""
			continue
		}
		if m := algoKey.FindStringSubmatch(line); m != nil {
			algo = m[1]
			continue
		}
		if m := valueKey.FindStringSubmatch(line); m != nil && current != nil && algo != "" {
			if h := pvesim.ChecksumHash(algo); h != nil {
				h.Write(current)
				lines[i] = m[1] + hex.EncodeToString(h.Sum(nil)) + m[3]
			}
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// urlPath maps a URL to the path served here: /<host>/<path>, or the path
// of a URL already pointing at an earlier run's server.
func urlPath(u string) string {
	if m := localURL.FindStringSubmatch(u); m != nil {
		return m[1]
	}
	rest := u[strings.Index(u, "://")+3:]
	return "/" + rest
}

const gib = 1 << 30

// fakeFile makes a small file that looks like what its name says: a qcow2
// header whose virtual size matches the real image's, an ISO 9660 volume
// descriptor, or an archive's magic bytes.
func fakeFile(path string) []byte {
	name := strings.ToLower(path)
	switch {
	case strings.HasSuffix(name, ".qcow2") || strings.HasSuffix(name, ".img"):
		size := int64(2 * gib) // Debian's generic cloud image
		if strings.Contains(name, "ubuntu") {
			size = 3*gib + gib/2
		}
		return qcow2Header(size, name)
	case strings.HasSuffix(name, ".iso"):
		b := make([]byte, 64<<10)
		copy(b[0x8000:], "\x01CD001\x01")
		copy(b[0x8028:], strings.ToUpper(volumeLabel(name)))
		return b
	case strings.HasSuffix(name, ".tar.xz"):
		return append([]byte("\xfd7zXZ\x00"), []byte(name)...)
	case strings.HasSuffix(name, ".tar.zst"):
		return append([]byte("\x28\xb5\x2f\xfd"), []byte(name)...)
	case strings.HasSuffix(name, ".tar.gz"):
		return append([]byte("\x1f\x8b\x08\x00"), []byte(name)...)
	}
	return []byte("proxmops demo file " + name + "\n")
}

// qcow2Header is a version 3 qcow2 header with the given virtual size.
func qcow2Header(virtualSize int64, name string) []byte {
	b := make([]byte, 1024)
	copy(b, "QFI\xfb")
	binary.BigEndian.PutUint32(b[4:], 3)                    // version
	binary.BigEndian.PutUint32(b[20:], 16)                  // cluster bits (64 KiB)
	binary.BigEndian.PutUint64(b[24:], uint64(virtualSize)) // virtual size
	binary.BigEndian.PutUint32(b[100:], 104)                // header length
	copy(b[512:], name)                                     // different files, different checksums
	return b
}

func volumeLabel(name string) string {
	base := name[strings.LastIndex(name, "/")+1:]
	base = strings.TrimSuffix(base, ".iso")
	if len(base) > 32 {
		base = base[:32]
	}
	return base
}

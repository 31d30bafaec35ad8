package pvesim

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Putting files on a storage: download-url and upload (pve-storage
// API2/Storage/Status.pm), with their checksum and image-format checks.

var (
	reISOExt       = regexp.MustCompile(`(?i)[^/]+\.(?:iso|img)$`)
	reVztmplExt    = regexp.MustCompile(`(?i)[^/]+\.(?:tar|tar\.(?:gz|xz|zst|bz2))$`)
	reUploadImport = regexp.MustCompile(`[a-zA-Z0-9\-.+=_]+\.(ova|qcow2|raw|vmdk)$`)
	reUnsafeChars  = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)
)

// normalizeContentFilename is PVE::Storage::normalize_content_filename.
func normalizeContentFilename(name string) string {
	name = strings.TrimSuffix(name, "\n")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return reUnsafeChars.ReplaceAllString(name, "_")
}

// checkContentFilename applies download-url's and upload's extension rules.
func checkContentFilename(content, filename string) (string, error) {
	switch content {
	case "iso":
		if !reISOExt.MatchString(filename) {
			return "", route.ParamErr("filename", "wrong file extension")
		}
		return "", nil
	case "vztmpl":
		if !reVztmplExt.MatchString(filename) {
			return "", route.ParamErr("filename", "wrong file extension")
		}
		return "", nil
	case "import":
		m := reUploadImport.FindStringSubmatch(filename)
		if m == nil {
			return "", route.ParamErr("filename", "invalid filename or wrong extension")
		}
		return m[1], nil
	}
	return "", route.ParamErr("content", fmt.Sprintf("upload content-type '%s' is not allowed", content))
}

// ChecksumHash returns a new hash for one of Proxmox's checksum-algorithm
// values (md5, sha1, sha224, sha256, sha384, sha512), or nil for another
// name. Callers that serve files to the simulator use it to compute the
// checksums download-url will verify.
func ChecksumHash(alg string) hash.Hash {
	switch alg {
	case "md5":
		return md5.New()
	case "sha1":
		return sha1.New()
	case "sha224":
		return sha256.New224()
	case "sha256":
		return sha256.New()
	case "sha384":
		return sha512.New384()
	case "sha512":
		return sha512.New()
	}
	return nil
}

// fileCheck inspects the start of a downloaded or uploaded import image
// the way pve-storage's file_size_info (Plugin.pm) does with `qemu-img info
// -f FORMAT`, FORMAT being what the file name implies: a qcow2 must start
// with the qcow2 magic, a vmdk with a sparse extent header ("KDMV"; a
// descriptor's extents are other files, which an untrusted image may not
// have), and any file is raw.
type fileCheck struct {
	head []byte
}

func (f *fileCheck) Write(p []byte) (int, error) {
	if need := 512 - len(f.head); need > 0 {
		if len(p) < need {
			need = len(p)
		}
		f.head = append(f.head, p[:need]...)
	}
	return len(p), nil
}

func (f *fileCheck) verify(format string, fileSize int64) (virtual int64, err error) {
	var ok bool
	switch format {
	case "qcow2":
		virtual, ok = qcow2VirtualSize(f.head)
	case "vmdk":
		virtual, ok = vmdkVirtualSize(f.head)
	default:
		virtual, ok = fileSize, true
	}
	if !ok {
		return 0, route.Fail("%s", errQemuImgInfo)
	}
	return virtual, nil
}

// qcow2VirtualSize reads the size field of a qcow2 header (8 bytes at offset 24, big-endian).
func qcow2VirtualSize(head []byte) (int64, bool) {
	if len(head) < 32 || string(head[:4]) != "QFI\xfb" {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(head[24:32])), true
}

// vmdkVirtualSize reads the capacity of a VMDK sparse extent header (8
// bytes at offset 12, little-endian, in 512-byte sectors).
func vmdkVirtualSize(head []byte) (int64, bool) {
	if len(head) < 20 || string(head[:4]) != "KDMV" {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(head[12:20])) * 512, true
}

// errQemuImgInfo is file_size_info's error for an untrusted file qemu-img
// cannot read in the given format.
const errQemuImgInfo = "failed to query file information with qemu-img"

// storedFile describes where a download or upload lands.
type storedFile struct {
	st       *Storage
	node     string
	content  string
	filename string
	format   string // image format for import content
}

func (f storedFile) volname() string { return contentPrefix(f.content) + f.filename }

func (f storedFile) dest() string { return f.st.contentDir(f.content) + "/" + f.filename }

func (s *Server) prepareStoredFile(r *route.Request, allowed func(*Storage) error) (storedFile, error) {
	// upload and download_url (API2/Storage/Status.pm) start with
	// storage_check_enabled on the node.
	st, err := s.storageCheckEnabled(r.Str("storage"), r.Str("node"))
	if err != nil {
		return storedFile{}, err
	}
	if st.Path == "" {
		return storedFile{}, route.Fail("can't upload to storage type '%s', not a file based storage!", st.Type)
	}
	content := r.Str("content")
	if err := allowed(st); err != nil {
		return storedFile{}, err
	}
	filename := normalizeContentFilename(r.Str("filename"))
	imgFormat, err := checkContentFilename(content, filename)
	if err != nil {
		return storedFile{}, err
	}
	return storedFile{st: st, node: r.Str("node"), content: content, filename: filename, format: imgFormat}, nil
}

func (s *Server) storeVolume(f storedFile, size, used int64) {
	format := f.format
	if format == "" {
		format = listedFormat(f.content, f.filename)
	}
	s.state.addVolume(&Volume{Node: f.node, Storage: f.st.ID, Name: f.volname(), Content: f.content, Format: format,
		Size: size, Used: used, CTime: s.clock.Now().Unix()})
}

func (s *Server) downloadURL(r *route.Request) (any, error) {
	f, err := s.prepareStoredFile(r, func(st *Storage) error {
		if !st.allows(r.Str("content")) {
			return route.Fail("storage '%s' is not configured for content-type '%s'", st.ID, r.Str("content"))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c := r.Str("compression"); c != "" && f.content != "iso" {
		// Proxmox fails this inside the worker.
		return s.startTask(r, f.node, "download", encodeText(f.filename), func(*taskCtx) error {
			return route.Fail("decompression not supported for %s", f.content)
		}), nil
	}
	url, alg, want := r.Str("url"), r.Str("checksum-algorithm"), strings.ToLower(r.Str("checksum"))
	verify := r.BoolOr("verify-certificates", true)
	return s.startTask(r, f.node, "download", encodeText(f.filename), func(tc *taskCtx) error {
		dest := f.dest()
		tc.Log("downloading %s to %s", url, dest)
		if err := tc.failPoint(); err != nil {
			return route.Fail("download failed: %s", strings.TrimRight(route.AsAPIError(err).Message, "\n"))
		}
		if existing := s.state.volume(f.node, f.st.ID+":"+f.volname()); existing != nil {
			if alg == "" {
				return route.Fail("refusing to override existing file '%s'", dest)
			}
			tc.Log("calculating checksum of existing file...")
			if existing.Checksums[alg] == want {
				tc.Log("OK, got correct file already, no need to download")
				return nil
			}
			return route.Fail("checksum mismatch: got '%s' != expect '%s', aborting", existing.Checksums[alg], want)
		}
		var (
			n     int64
			sums  map[string]string
			check fileCheck
			dlErr error
		)
		tc.unlocked(func() {
			n, sums, dlErr = fetchURL(url, verify, s.opts.AllowRemoteDownloads, &check, func(line string) {
				s.mu.Lock()
				tc.Log("%s", line)
				s.mu.Unlock()
			})
		})
		if dlErr != nil {
			return route.Fail("download failed: %v", dlErr)
		}
		if alg != "" {
			got := sums[alg]
			if got != want {
				tc.Log("calculating checksum...")
				return route.Fail("checksum mismatch: got '%s' != expect '%s'", got, want)
			}
			tc.Log("calculating checksum...OK, checksum verified")
		}
		virtual, err := check.verify(f.format, n)
		if err != nil {
			// download_file_from_url's assert_file_validity wrapper.
			return route.Fail("failed to verify file: %s", errQemuImgInfo)
		}
		s.storeVolume(f, virtual, n)
		if v := s.state.volume(f.node, f.st.ID+":"+f.volname()); v != nil {
			v.Checksums = sums
		}
		tc.Log("download of '%s' to '%s' finished", url, dest)
		return nil
	}), nil
}

// fetchURL downloads url, hashing with every algorithm and feeding check;
// the content itself is not kept. progress gets wget's dot:giga lines
// (wget.go) as they come.
func fetchURL(url string, verify, anyAddress bool, check io.Writer, progress func(line string)) (int64, map[string]string, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: !verify} //nolint:gosec // the API's verify-certificates=0
	client := &http.Client{Transport: tr, Timeout: 30 * time.Minute}
	if !anyAddress {
		if err := loopbackOnly(url); err != nil {
			return 0, nil, err
		}
		// Every connection, redirects included, must end on loopback.
		dialer := &net.Dialer{Timeout: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("pvesim: refusing to connect to %s: downloads are limited to loopback addresses", address)
			}
			return nil
		}}
		tr.DialContext = dialer.DialContext
		tr.Proxy = nil
		client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return loopbackOnly(req.URL.String())
		}
	}
	resp, err := client.Get(url)
	if err != nil {
		var refused *remoteDownloadError
		if errors.As(err, &refused) {
			return 0, nil, refused
		}
		return 0, nil, fmt.Errorf("command 'wget --progress=dot:giga -O <tmpfile> %s' failed: exit code 4", url)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, nil, fmt.Errorf("command 'wget --progress=dot:giga -O <tmpfile> %s' failed: exit code 8", url)
	}
	algs := []string{"md5", "sha1", "sha224", "sha256", "sha384", "sha512"}
	hashes := map[string]hash.Hash{}
	writers := []io.Writer{check}
	for _, a := range algs {
		hashes[a] = ChecksumHash(a)
		writers = append(writers, hashes[a])
	}
	w := io.MultiWriter(writers...)
	buf := make([]byte, 256<<10)
	var n int64
	started := time.Now()
	dots := wgetDots{total: resp.ContentLength}
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			w.Write(buf[:k])
			n += int64(k)
			for _, line := range dots.add(int64(k), time.Since(started)) {
				progress(line)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, nil, fmt.Errorf("command 'wget --progress=dot:giga -O <tmpfile> %s' failed: exit code 4", url)
		}
	}
	progress(dots.finish(time.Since(started)))
	sums := map[string]string{}
	for a, h := range hashes {
		sums[a] = hex.EncodeToString(h.Sum(nil))
	}
	return n, sums, nil
}

// remoteDownloadError is a download the simulator refused to make because
// its address is not on loopback (see Options.AllowRemoteDownloads).
type remoteDownloadError struct{ url string }

func (e *remoteDownloadError) Error() string {
	return fmt.Sprintf("pvesim downloads only from loopback addresses (127.0.0.0/8, ::1, localhost), not %s; "+
		"serve the file locally or start the simulator with --allow-remote-downloads", e.url)
}

// loopbackOnly refuses a URL whose host is not a loopback address, without
// resolving any name: only IP literals and "localhost" pass.
func loopbackOnly(raw string) error {
	u, err := neturl.Parse(raw)
	if err != nil {
		return &remoteDownloadError{url: raw}
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return &remoteDownloadError{url: raw}
}

// encodeText is PVE::Tools::encode_text, used for task ids.
func encodeText(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c < 0x20 || c > 0x7e || c == ':' || c == '%' {
			fmt.Fprintf(&b, "%%%02x", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func (s *Server) upload(r *route.Request) (any, error) {
	if r.Upload == nil {
		return nil, route.Fail("upload without file")
	}
	content := r.Str("content")
	if content != "iso" && content != "vztmpl" && content != "import" {
		return nil, route.ParamErr("content", fmt.Sprintf("upload content type '%s' not allowed", content))
	}
	f, err := s.prepareStoredFile(r, func(st *Storage) error {
		if !st.allows(content) {
			return route.Fail("storage '%s' does not support '%s' content", st.ID, content)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	alg, want := r.Str("checksum-algorithm"), strings.ToLower(r.Str("checksum"))
	// The request's temporary file goes away when the request ends: read it now.
	tmp, err := os.Open(r.Upload.Path)
	if err != nil {
		return nil, err
	}
	var check fileCheck
	hashes := map[string]hash.Hash{}
	ws := []io.Writer{&check}
	for _, a := range []string{"md5", "sha1", "sha224", "sha256", "sha384", "sha512"} {
		hashes[a] = ChecksumHash(a)
		ws = append(ws, hashes[a])
	}
	n, err := io.Copy(io.MultiWriter(ws...), tmp)
	tmp.Close()
	if err != nil {
		return nil, err
	}
	sums := map[string]string{}
	for a, h := range hashes {
		sums[a] = hex.EncodeToString(h.Sum(nil))
	}
	tmpName := fmt.Sprintf("/var/tmp/pveupload-%x", sums["md5"][:16])
	return s.startTask(r, f.node, "imgcopy", "", func(tc *taskCtx) error {
		tc.Log("starting file import from: %s", tmpName)
		if err := tc.failPoint(); err != nil {
			return err
		}
		if alg != "" {
			if sums[alg] != want {
				tc.Log("calculating checksum...")
				return route.Fail("checksum mismatch: got '%s' != expect '%s'", sums[alg], want)
			}
			tc.Log("calculating checksum...OK, checksum verified")
		}
		virtual, err := check.verify(f.format, n)
		if err != nil {
			return err
		}
		tc.Log("target node: %s", f.node)
		tc.Log("target file: %s", f.dest())
		tc.Log("file size is: %d", n)
		tc.Log("command: cp -- %s %s", tmpName, f.dest())
		s.storeVolume(f, virtual, n)
		if v := s.state.volume(f.node, f.st.ID+":"+f.volname()); v != nil {
			v.Checksums = sums
		}
		tc.Log("finished file import successfully")
		return nil
	}), nil
}

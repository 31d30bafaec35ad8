package cloudinit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
)

// VolumeLabel is the label NoCloud looks for.
const VolumeLabel = "cidata"

// maxUserData bounds the user-data size; cloud-init itself refuses far less.
const maxUserData = 16 << 20

// Seed is the content of a NoCloud seed.
type Seed struct {
	// UserData is written verbatim as user-data.
	UserData string
	// Hostname goes into meta-data as local-hostname (optional).
	Hostname string
	// NetworkConfig is written as network-config when not empty.
	NetworkConfig string
}

// Hash is a short, stable digest of everything the seed carries.
func (s Seed) Hash() string {
	h := sha256.New()
	for _, part := range []string{s.UserData, s.Hostname, s.NetworkConfig} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// InstanceID is the meta-data instance-id: it changes whenever the content
// changes, which is what makes cloud-init run again.
func (s Seed) InstanceID() string { return "proxmops-" + s.Hash() }

// MetaData renders the meta-data document.
func (s Seed) MetaData() string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance-id: %s\n", s.InstanceID())
	if s.Hostname != "" {
		fmt.Fprintf(&b, "local-hostname: %s\n", s.Hostname)
	}
	return b.String()
}

// FileName is the ISO's file name on the storage for a VM:
// proxmops-cidata-<vmid>-<hash>.iso.
func FileName(vmid int, s Seed) string {
	return fmt.Sprintf("proxmops-cidata-%d-%s.iso", vmid, s.Hash())
}

// ParseFileName returns the vmid and hash of a name made by FileName.
func ParseFileName(name string) (vmid int, hash string, ok bool) {
	rest, found := strings.CutPrefix(name, "proxmops-cidata-")
	if !found {
		return 0, "", false
	}
	rest, found = strings.CutSuffix(rest, ".iso")
	if !found {
		return 0, "", false
	}
	idPart, hash, found := strings.Cut(rest, "-")
	if !found || hash == "" {
		return 0, "", false
	}
	if _, err := fmt.Sscanf(idPart, "%d", &vmid); err != nil || fmt.Sprint(vmid) != idPart {
		return 0, "", false
	}
	return vmid, hash, true
}

// BuildISO writes the seed as an ISO 9660 image with Rock Ridge and Joliet
// names to w.
func BuildISO(w io.Writer, s Seed) error {
	if s.UserData == "" {
		return errors.New("cloudinit: user-data is empty")
	}
	if len(s.UserData) > maxUserData {
		return fmt.Errorf("cloudinit: user-data is %d bytes, more than the %d allowed", len(s.UserData), maxUserData)
	}
	dir, err := os.MkdirTemp("", "proxmops-cidata-")
	if err != nil {
		return fmt.Errorf("cloudinit: %w", err)
	}
	defer os.RemoveAll(dir)
	workspace := filepath.Join(dir, "ws")
	if err := os.Mkdir(workspace, 0o700); err != nil {
		return fmt.Errorf("cloudinit: %w", err)
	}
	imgPath := filepath.Join(dir, "cidata.iso")
	size := int64(len(s.UserData)+len(s.NetworkConfig)) + 1<<20
	size = (size + 2047) / 2048 * 2048
	b, err := file.CreateFromPath(imgPath, size)
	if err != nil {
		return fmt.Errorf("cloudinit: %w", err)
	}
	defer b.Close()
	fs, err := iso9660.Create(b, size, 0, 2048, workspace)
	if err != nil {
		return fmt.Errorf("cloudinit: creating image: %w", err)
	}
	files := []struct{ name, body string }{{"user-data", s.UserData}, {"meta-data", s.MetaData()}}
	if s.NetworkConfig != "" {
		files = append(files, struct{ name, body string }{"network-config", s.NetworkConfig})
	}
	for _, f := range files {
		fh, err := fs.OpenFile(f.name, os.O_CREATE|os.O_RDWR)
		if err != nil {
			return fmt.Errorf("cloudinit: adding %s: %w", f.name, err)
		}
		if _, err := io.WriteString(fh, f.body); err != nil {
			fh.Close()
			return fmt.Errorf("cloudinit: writing %s: %w", f.name, err)
		}
		if err := fh.Close(); err != nil {
			return fmt.Errorf("cloudinit: writing %s: %w", f.name, err)
		}
	}
	if err := fs.Finalize(iso9660.FinalizeOptions{RockRidge: true, Joliet: true, VolumeIdentifier: VolumeLabel}); err != nil {
		return fmt.Errorf("cloudinit: finalizing image: %w", err)
	}
	img, err := os.Open(imgPath)
	if err != nil {
		return fmt.Errorf("cloudinit: %w", err)
	}
	defer img.Close()
	if _, err := io.Copy(w, img); err != nil {
		return fmt.Errorf("cloudinit: %w", err)
	}
	return nil
}

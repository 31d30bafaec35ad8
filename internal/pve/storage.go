package pve

import (
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"strings"
)

func storagePath(node, storage string) string {
	return "nodes/" + PathEscape(node) + "/storage/" + PathEscape(storage)
}

// NodeStorages lists the storages available on a node, optionally only those
// accepting a content type.
func (c *Client) NodeStorages(ctx context.Context, node, content string) ([]StorageInfo, error) {
	var q *Params
	if content != "" {
		q = NewParams().Set("content", content)
	}
	var s []StorageInfo
	err := c.Get(ctx, "nodes/"+PathEscape(node)+"/storage", q, &s)
	return s, err
}

// StorageContent lists the volumes of a storage, optionally of one content
// type ("iso", "import", "images", "vztmpl").
func (c *Client) StorageContent(ctx context.Context, node, storage, content string) ([]Volume, error) {
	var q *Params
	if content != "" {
		q = NewParams().Set("content", content)
	}
	var v []Volume
	err := c.Get(ctx, storagePath(node, storage)+"/content", q, &v)
	return v, err
}

// VolumeInfo is GET .../content/{volume}.
type VolumeInfo struct {
	Path   string `json:"path"`
	Size   Int    `json:"size"`
	Format string `json:"format"`
}

// VolumeInfo reads a volume's path, size and format.
func (c *Client) VolumeInfo(ctx context.Context, node, storage, volid string) (VolumeInfo, error) {
	var v VolumeInfo
	err := c.Get(ctx, storagePath(node, storage)+"/content/"+PathEscape(volid), nil, &v)
	return v, err
}

// SetVolumeNotes replaces a volume's notes. Proxmox keeps notes for backups
// only (pve-storage DirPlugin.pm update_volume_notes).
func (c *Client) SetVolumeNotes(ctx context.Context, node, storage, volid, notes string) error {
	return c.Put(ctx, storagePath(node, storage)+"/content/"+PathEscape(volid), NewParams().Set("notes", notes), nil)
}

// DeleteVolume deletes a volume; the task id is empty when it finished at once.
func (c *Client) DeleteVolume(ctx context.Context, node, storage, volid string) (string, error) {
	var upid string
	err := c.Delete(ctx, storagePath(node, storage)+"/content/"+PathEscape(volid), nil, &upid)
	return upid, err
}

// DownloadOptions are the parameters of download-url.
type DownloadOptions struct {
	Content            string // iso, vztmpl, import
	Filename           string
	URL                string
	Checksum           string
	ChecksumAlgorithm  string // md5, sha1, sha224, sha256, sha384, sha512
	VerifyCertificates *bool
}

// DownloadURL has a node fetch a URL onto a storage.
func (c *Client) DownloadURL(ctx context.Context, node, storage string, o DownloadOptions) (string, error) {
	if (o.Checksum == "") != (o.ChecksumAlgorithm == "") {
		return "", fmt.Errorf("pve: checksum and checksum algorithm go together")
	}
	p := NewParams().Set("content", o.Content).Set("filename", o.Filename).Set("url", o.URL)
	if o.Checksum != "" {
		p.Set("checksum", strings.ToLower(o.Checksum)).Set("checksum-algorithm", o.ChecksumAlgorithm)
	}
	if o.VerifyCertificates != nil {
		p.SetBool("verify-certificates", *o.VerifyCertificates)
	}
	var upid string
	err := c.Post(ctx, storagePath(node, storage)+"/download-url", p, &upid)
	return upid, err
}

// Upload sends a file to a storage (multipart/form-data), content "iso",
// "vztmpl" or "import". The body is streamed, never buffered whole.
func (c *Client) Upload(ctx context.Context, node, storage, content, filename string, data io.Reader) (string, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			if err := mw.WriteField("content", content); err != nil {
				return err
			}
			fw, err := mw.CreateFormFile("filename", filename)
			if err != nil {
				return err
			}
			if _, err := io.Copy(fw, data); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	var upid string
	err := c.PostBody(ctx, storagePath(node, storage)+"/upload", mw.FormDataContentType(), pr, &upid)
	pr.CloseWithError(io.ErrClosedPipe)
	return upid, err
}

// StorageConfig is one storage.cfg entry as GET /storage lists it: the
// options that decide a new disk's format and how snapshots roll back.
type StorageConfig struct {
	Storage string `json:"storage"`
	Type    string `json:"type"`
	// Format is the default image format of a file storage ("" for the
	// plugin's default).
	Format string `json:"format"`
	// VolumeChain is "snapshot-as-volume-chain".
	VolumeChain Int `json:"snapshot-as-volume-chain"`
}

// StorageConfigs reads storage.cfg: the storages the caller may audit or
// allocate on (pve-storage API2/Storage/Config.pm index).
func (c *Client) StorageConfigs(ctx context.Context) ([]StorageConfig, error) {
	var out []StorageConfig
	err := c.Get(ctx, "storage", nil, &out)
	return out, err
}

package pvesim

import (
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"os"

	"github.com/proxmops/proxmops/pvesim/route"
)

// removeUpload deletes the spooled file of an upload, once served.
func removeUpload(u *route.Upload) {
	if u != nil && u.Path != "" {
		os.Remove(u.Path)
	}
}

// readMultipart reads the fields and the one file of an upload request.
func readMultipart(hr *http.Request, boundary string) (*route.Upload, map[string]string, error) {
	mr := multipart.NewReader(hr.Body, boundary)
	fields := map[string]string{}
	var up *route.Upload
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			removeUpload(up)
			return nil, nil, errors.New("error reading multipart upload: " + err.Error())
		}
		if part.FileName() != "" {
			f, err := os.CreateTemp("", "pvesim-upload-*")
			if err != nil {
				return nil, nil, err
			}
			n, err := io.Copy(f, part)
			f.Close()
			if err != nil {
				os.Remove(f.Name())
				return nil, nil, errors.New("error reading upload: " + err.Error())
			}
			up = &route.Upload{Path: f.Name(), Filename: part.FileName(), Size: n}
			if _, ok := fields["filename"]; !ok {
				fields["filename"] = part.FileName()
			}
			continue
		}
		b, err := io.ReadAll(io.LimitReader(part, maxPostSize))
		if err != nil {
			removeUpload(up)
			return nil, nil, err
		}
		fields[part.FormName()] = string(b)
	}
	if up == nil {
		return nil, nil, errors.New("missing file in upload")
	}
	return up, fields, nil
}

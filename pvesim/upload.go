package pvesim

import (
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"os"
)

// uploadedFile is the file part of a multipart upload, spooled to disk.
type uploadedFile struct {
	path     string
	filename string
	size     int64
}

func (u *uploadedFile) cleanup() {
	if u != nil && u.path != "" {
		os.Remove(u.path)
	}
}

// readMultipart reads the fields and the one file of an upload request.
func readMultipart(hr *http.Request, boundary string) (*uploadedFile, map[string]string, error) {
	mr := multipart.NewReader(hr.Body, boundary)
	fields := map[string]string{}
	var up *uploadedFile
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			up.cleanup()
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
			up = &uploadedFile{path: f.Name(), filename: part.FileName(), size: n}
			if _, ok := fields["filename"]; !ok {
				fields["filename"] = part.FileName()
			}
			continue
		}
		b, err := io.ReadAll(io.LimitReader(part, maxPostSize))
		if err != nil {
			up.cleanup()
			return nil, nil, err
		}
		fields[part.FormName()] = string(b)
	}
	if up == nil {
		return nil, nil, errors.New("missing file in upload")
	}
	return up, fields, nil
}

package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/pvefields"
)

// resolvedImage is an ImageSpec placed on a node: which volume the boot disk
// is imported from, and whether it must be downloaded first.
type resolvedImage struct {
	volid         string
	storage       string
	fileName      string
	url           string // "" when the volume is given
	present       bool
	shared        bool // the storage is shared
	checksumAlgo  string
	checksumValue string
}

// resolveImage decides where an image lives on node. It reads only the
// snapshot.
func resolveImage(snap *Observation, node string, img *ImageSpec) (*resolvedImage, error) {
	if img == nil {
		return nil, fmt.Errorf("no image")
	}
	if img.Volume != "" {
		stor, rest, ok := strings.Cut(img.Volume, ":")
		if !ok || rest == "" {
			return nil, fmt.Errorf("image volume %q is not a volume id like local:import/debian.qcow2", img.Volume)
		}
		if strings.HasPrefix(rest, "iso/") {
			return nil, fmt.Errorf("image volume %q is ISO content: Proxmox imports disks only from import or images volumes", img.Volume)
		}
		// import-from activates the source's storage on the node.
		if reason := storageRefusal(snap, node, stor, ""); reason != "" {
			return nil, errors.New(reason)
		}
		r := &resolvedImage{volid: img.Volume, storage: stor}
		if vols, listed, _ := snap.Volumes(node, stor); listed {
			for _, v := range vols {
				if v.VolID == img.Volume {
					r.present = true
				}
			}
			if !r.present {
				return nil, fmt.Errorf("image volume %s does not exist on node %s", img.Volume, node)
			}
		}
		return r, nil
	}
	stor := img.Storage
	if stor == "" {
		stor = importStorage(snap, node)
		if stor == "" {
			return nil, fmt.Errorf("no storage on node %s accepts import content: enable it on one (e.g. local) or set image.storage", node)
		}
	} else if reason := downloadRefusal(snap, node, stor, "import"); reason != "" {
		return nil, errors.New(reason)
	} else if snap.Storage(node, stor) == nil {
		return nil, fmt.Errorf("storage '%s' is not listed on node '%s'", stor, node)
	}
	name, err := pvefields.ImportFileName(img.URL, img.FileName, img.Format)
	if err != nil {
		return nil, err
	}
	r := &resolvedImage{volid: stor + ":import/" + name, storage: stor, fileName: name, url: img.URL,
		checksumAlgo: img.ChecksumAlgo, checksumValue: img.ChecksumValue}
	_, r.present = snap.Volume(node, stor, r.volid)
	if ref := snap.Storage(node, stor); ref != nil {
		r.shared = ref.Shared
	}
	return r, nil
}

// importStorage picks the storage that receives cloud images on a node:
// "local" when it accepts import content, else the first that does.
func importStorage(snap *Observation, node string) string { return storageFor(snap, node, "import") }

// storageFor is "local" when it accepts content on node, else the first
// storage there that does ("" when none).
func storageFor(snap *Observation, node, content string) string {
	if ref := snap.Storage(node, "local"); ref != nil && ref.Accepts(content) {
		return "local"
	}
	for _, ref := range snap.StoragesOn(node) {
		if ref.Accepts(content) {
			return ref.Storage
		}
	}
	return ""
}

// isoStorage picks a storage for ISO content on a node (the CIDATA seeds).
func isoStorage(snap *Observation, node string) string { return storageFor(snap, node, "iso") }

// claimStorage names a storage for the concurrency limits.
func claimStorage(snap *Observation, node, storage string) string {
	if storage == "" {
		return ""
	}
	if ref := snap.Storage(node, storage); ref != nil {
		return storageKey(ref)
	}
	return node + "/" + storage
}

// Package cloudinit builds NoCloud seed ISOs (volume label "cidata") holding
// user-data and meta-data, for VMs whose manifest carries raw userData.
//
// The meta-data's instance-id carries a hash of the seed's content, so a
// changed userData yields a new instance-id and cloud-init runs again in the
// guest; the ISO's file name carries the same hash, so the engine can tell
// from a VM's configuration alone whether the attached seed is current.
//
// The image is written with Rock Ridge and Joliet names: cloud-init looks for
// the files "user-data" and "meta-data" by those exact names, which plain
// ISO 9660 cannot spell (it allows only A-Z, 0-9 and '_'). That is why the
// writer is go-diskfs rather than kdomanski/iso9660, whose writer has no
// Rock Ridge or Joliet support.
package cloudinit

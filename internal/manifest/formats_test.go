package manifest

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// formatSamples are valid values per format, mutated by the matcher test.
var formatSamples = map[string][]string{
	"dns-label":  {"vm-1", "a", "web01", "x-y-z", "0a"},
	"node":       {"pve1", "PVE-node1", "n", "a-B"},
	"storage-id": {"local-lvm", "local", "nfs_1.x", "ab"},
	"tag":        {"prod", "_a+b.c-d", "A1"},
	"bridge":     {"vmbr0", "vmbr0.20", "a_b-c"},
	"sdn-id":     {"lab", "zone1", "ab"},
	"volume-id":  {"local:import/x.qcow2", "local-lvm:vm-100-disk-0", "nfs.1:iso/a_b.iso", "ab:x"},
	"dns-name":   {"example.org", "a.b-c.d", "host", "x1.y2"},
	"ssh-key": {
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAII9/UjT7L8VL54itcaiO2UWYIARFcav9TSUrKQks9xgm alice@laptop",
		"ssh-rsa AAAAB3NzaC1yc2E= bob", "ecdsa-sha2-nistp384 AAAA==", "sk-ssh-ed25519@openssh.com AAAA+/== c d",
		"ssh-dss A", "ecdsa-sha2-nistp521 AB=== x", "sk-ecdsa-sha2-nistp256@openssh.com QQ",
	},
	"hex": {"04396d12b0f377958a070c38a923c227832fa3b3e18ddc013936ecf492e9fbb3", "aF09"},
}

// TestFastMatchersAgreeWithPatterns checks every hand-written format
// matcher against its regular expression (the specification, also used by
// the JSON Schema) on the samples, short strings over the bytes that matter
// and many random mutations of the samples.
func TestFastMatchersAgreeWithPatterns(t *testing.T) {
	alphabet := []string{"a", "z", "A", "Z", "0", "9", "f", "g", "-", "_", ".", ":", "/", "+", "=", "@", " ", "\t", "\n", "\r", "\f", "\v", "\x00", "é", "\xff", "!"}
	rng := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for name, f := range formats {
		if !f.fast {
			continue
		}
		fast++
		samples := formatSamples[name]
		if len(samples) == 0 {
			t.Errorf("format %s has a hand-written matcher but no samples here", name)
			continue
		}
		check := func(s string) {
			if got, want := f.match(s), f.re.MatchString(s); got != want {
				t.Errorf("format %s, %q: matcher says %v, pattern %s says %v", name, s, got, f.pattern, want)
			}
		}
		for _, s := range samples {
			if !f.match(s) {
				t.Errorf("format %s: sample %q does not match", name, s)
			}
			check(s)
		}
		check("")
		for _, a := range alphabet {
			check(a)
			for _, b := range alphabet {
				check(a + b)
				for _, c := range []string{"a", "-", ".", ":", " ", "="} {
					check(a + b + c)
					check(c + a + b)
				}
			}
		}
		for range 20000 {
			s := samples[rng.IntN(len(samples))]
			for range 1 + rng.IntN(3) {
				i := rng.IntN(len(s) + 1)
				a := alphabet[rng.IntN(len(alphabet))]
				switch rng.IntN(4) {
				case 0: // insert
					s = s[:i] + a + s[i:]
				case 1: // replace
					if i < len(s) {
						s = s[:i] + a + s[i+1:]
					}
				case 2: // delete
					if i < len(s) {
						s = s[:i] + s[i+1:]
					}
				case 3: // repeat a piece
					s = s[:i] + strings.Repeat(a, 1+rng.IntN(4)) + s[i:]
				}
			}
			check(s)
		}
	}
	if fast == 0 {
		t.Fatal("no hand-written matchers found")
	}
}

// TestParseSizeAgreesWithPattern checks ParseSize's hand-written parser
// against the size pattern the JSON Schema uses.
func TestParseSizeAgreesWithPattern(t *testing.T) {
	re := sizeRe
	inputs := []string{"", "G", "1", "1G", "20G", "1.5T", "10240K", "512M", "1.G", ".5G", "1..5G", "01G", "1.50G", "1g", "1GB", " 1G", "1G ", "1e3G", "-1G", "+1G", "1_0G", "١G", "99999999999999999999T", "0.0001T", "1.5.5G"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteByte("0123456789.KMGTg x"[rng.IntN(18)])
		}
		inputs = append(inputs, b.String())
	}
	for _, s := range inputs {
		_, err := ParseSize(s)
		if re.MatchString(s) {
			// A well-formed size may still be out of range; it must never be
			// refused as malformed.
			if err != nil && strings.Contains(err.Error(), "is not a size") {
				t.Errorf("%q matches the pattern but ParseSize says %v", s, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), "is not a size") {
			t.Errorf("%q does not match the pattern but ParseSize says %v", s, err)
		}
	}
}

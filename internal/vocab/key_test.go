package vocab

import "testing"

func TestKeyIsKindSlashNameAndSplitsBack(t *testing.T) {
	for _, c := range []struct{ kind, name, key string }{
		{"VirtualMachine", "web-01", "VirtualMachine/web-01"},
		{"SdnVnet", "v1", "SdnVnet/v1"},
	} {
		if got := Key(c.kind, c.name); got != c.key {
			t.Errorf("Key(%q, %q) = %q, want %q", c.kind, c.name, got, c.key)
		}
		if kind, name, ok := SplitKey(c.key); !ok || kind != c.kind || name != c.name {
			t.Errorf("SplitKey(%q) = %q, %q, %v", c.key, kind, name, ok)
		}
	}
	if _, _, ok := SplitKey("web-01"); ok {
		t.Error("a key without a kind split")
	}
}

package manifest

import "testing"

func TestEveryKindHasANounOfItsOwn(t *testing.T) {
	seen := map[string]Kind{}
	for _, info := range KindTable() {
		if info.Noun == "" {
			t.Errorf("%s has no noun", info.Kind)
			continue
		}
		if other, ok := seen[info.Noun]; ok {
			t.Errorf("%s and %s are both called %q", other, info.Kind, info.Noun)
		}
		seen[info.Noun] = info.Kind
	}
}

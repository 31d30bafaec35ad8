package main

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// generated is the file `go generate ./internal/api/` writes.
const generated = "../../../web/src/api/generated.ts"

func TestGeneratedFileIsCurrent(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `go generate ./internal/api/` and commit it", generated)
	}
}

func TestEveryVocabularyWordTypeIsAUnion(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[vocab.Status](), reflect.TypeFor[vocab.Health](), reflect.TypeFor[vocab.Action](),
		reflect.TypeFor[vocab.SyncPolicy](), reflect.TypeFor[api.HistoryEvent](), reflect.TypeFor[api.Role](),
		reflect.TypeFor[api.Relation](), reflect.TypeFor[api.ActorKind](), reflect.TypeFor[api.CheckLevel](), reflect.TypeFor[vocab.Hold](),
		reflect.TypeFor[api.LogLevel](), reflect.TypeFor[api.ReplicaRole](),
	} {
		if _, ok := unions[typ]; !ok {
			t.Errorf("%s has no union", typ)
		}
	}
}

// fieldShapes is a struct with one field of each shape the generator knows.
type fieldShapes struct {
	Plain    string               `json:"plain"`
	Omitted  int                  `json:"omitted,omitempty"`
	Pointer  *time.Time           `json:"pointer"`
	List     []vocab.Status       `json:"list"`
	Counts   map[vocab.Status]int `json:"counts"`
	Free     map[string]any       `json:"free,omitempty"`
	Word     api.Role             `json:"word"`
	Skipped  string               `json:"-"`
	Untagged bool
	hidden   bool
}

func TestFieldsAreWrittenAsEncodingJSONWritesThem(t *testing.T) {
	g := &generator{docs: map[string]string{"fieldShapes.Plain": "Plain is documented."}, done: map[reflect.Type]bool{}}
	var b bytes.Buffer
	if err := g.writeStruct(&b, reflect.TypeFor[fieldShapes]()); err != nil {
		t.Fatal(err)
	}
	want := `export interface fieldShapes {
  // Plain is documented.
  plain: string;
  omitted?: number;
  pointer: string | null;
  list: Status[] | null;
  counts: Partial<Record<Status, number>> | null;
  free?: Record<string, unknown> | null;
  word: Role;
  Untagged: boolean;
}
`
	if got := strings.TrimPrefix(b.String(), "\n"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	_ = fieldShapes{}.hidden
}

func TestAnEmbeddedStructIsExtended(t *testing.T) {
	g := &generator{docs: map[string]string{}, done: map[reflect.Type]bool{}}
	var b bytes.Buffer
	if err := g.writeStruct(&b, reflect.TypeFor[api.ResourceDetail]()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "\nexport interface ResourceDetail extends ResourceSummary {\n") {
		t.Errorf("got\n%s", b.String())
	}
}

func TestATextTypeOutsideTheVocabularyIsAnError(t *testing.T) {
	g := &generator{docs: map[string]string{}, done: map[reflect.Type]bool{}}
	if _, err := g.tsType(reflect.TypeFor[vocab.Status]()); err != nil {
		t.Fatal(err)
	}
	if _, err := g.tsType(reflect.TypeFor[textMarshaler]()); err == nil {
		t.Error("a text-marshaled type with no union was written")
	}
}

// textMarshaler is a word type the generator does not know.
type textMarshaler int

func (textMarshaler) MarshalText() ([]byte, error) { return nil, nil }

package filter

import (
	"errors"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func TestNewTag(t *testing.T) {
	for _, typ := range []string{"", TypeTag} {
		f, err := New(typ, "TagA || TagB")
		if err != nil {
			t.Fatalf("New(%q): %v", typ, err)
		}
		if !f.MatchTagsCode(message.TagsCode("TagB")) || f.MatchTagsCode(message.TagsCode("TagC")) || f.MatchTagsCode(0) {
			t.Errorf("New(%q): tags code matching is wrong", typ)
		}
		if !f.MatchProperties(map[string]string{"TAGS": "TagC"}) {
			t.Errorf("New(%q): a TAG filter rejected properties", typ)
		}
	}
	if f, err := New(TypeTag, "||"); err == nil || f != nil {
		t.Errorf("New(TAG, ||) = %v, %v; want nil and an error", f, err)
	}
}

func TestNewSQL92(t *testing.T) {
	f, err := New(TypeSQL92, "TAGS = 'TagA' AND a > 5")
	if err != nil {
		t.Fatal(err)
	}
	if !f.MatchTagsCode(message.TagsCode("TagB")) || !f.MatchTagsCode(0) {
		t.Error("a SQL92 filter must pass every tags code")
	}
	if !f.MatchProperties(map[string]string{"TAGS": "TagA", "a": "6"}) {
		t.Error("matching properties rejected")
	}
	if f.MatchProperties(map[string]string{"TAGS": "TagB", "a": "6"}) {
		t.Error("other tag accepted")
	}
	if f.MatchProperties(nil) {
		t.Error("no properties accepted")
	}
	if f, err := New(TypeSQL92, ""); !errors.Is(err, ErrSyntax) || f != nil {
		t.Errorf("New(SQL92, \"\") = %v, %v; want a syntax error", f, err)
	}
}

func TestNewUnknownType(t *testing.T) {
	for _, typ := range []string{"sql92", "tag", "CLASS", "SQL"} {
		if _, err := New(typ, "a = 1"); !errors.Is(err, ErrExpressionType) {
			t.Errorf("New(%q) error = %v, want ErrExpressionType", typ, err)
		}
	}
}

func TestExpressionString(t *testing.T) {
	const src = "a > 5 AND b = 'x'"
	e, err := CompileSQL92(src)
	if err != nil {
		t.Fatal(err)
	}
	if e.String() != src {
		t.Errorf("String() = %q", e.String())
	}
}

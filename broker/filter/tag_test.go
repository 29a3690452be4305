package filter

import (
	"errors"
	"slices"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func TestParseTagExpression(t *testing.T) {
	tests := []struct {
		expr string
		all  bool
		tags []string
	}{
		{"", true, nil},
		{"*", true, nil},
		{" * ", false, []string{"*"}}, // only exactly "*" is the wildcard
		{"TagA", false, []string{"TagA"}},
		{"TagA || TagB", false, []string{"TagA", "TagB"}},
		{"TagA||TagB||TagA", false, []string{"TagA", "TagB"}},
		{"\tTagA\n||\x01TagB ", false, []string{"TagA", "TagB"}}, // trim drops chars <= ' '
		{"TagA || || TagB", false, []string{"TagA", "TagB"}},
		{"||TagA", false, []string{"TagA"}},
		{"a|||b", false, []string{"a", "|b"}},
		{"Tag A", false, []string{"Tag A"}},
		{" || ", false, nil},                          // no tags: matches nothing
		{"\u00a0TagA", false, []string{"\u00a0TagA"}}, // NBSP is not trimmed
	}
	for _, tt := range tests {
		f, err := ParseTagExpression(tt.expr)
		if err != nil {
			t.Errorf("ParseTagExpression(%q): %v", tt.expr, err)
			continue
		}
		if f.All() != tt.all || !slices.Equal(f.Tags(), tt.tags) {
			t.Errorf("ParseTagExpression(%q) = all %v tags %q, want all %v tags %q",
				tt.expr, f.All(), f.Tags(), tt.all, tt.tags)
		}
		for _, tag := range tt.tags {
			if !f.MatchTagsCode(message.TagsCode(tag)) || !f.MatchTag(tag) {
				t.Errorf("%q: tag %q does not match", tt.expr, tag)
			}
		}
	}
}

func TestParseTagExpressionOnlySeparators(t *testing.T) {
	for _, expr := range []string{"||", "||||"} {
		if _, err := ParseTagExpression(expr); !errors.Is(err, ErrTagExpression) {
			t.Errorf("ParseTagExpression(%q) error = %v, want ErrTagExpression", expr, err)
		}
	}
}

func TestTagFilterMatch(t *testing.T) {
	f, err := ParseTagExpression("TagA || Aa || polygenelubricants")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		code int64
		want bool
	}{
		{"subscribed tag", 2598919, true},
		{"other tag", message.TagsCode("TagB"), false},
		{"no tag", 0, false},
		{"negative hash", -2147483648, true},
		{"only low 32 bits count", 1<<32 | 2598919, true},
		{"unsigned form of negative hash", 1 << 31, true},
		{"collision passes the broker", message.TagsCode("BB"), true},
	}
	for _, tt := range tests {
		if got := f.MatchTagsCode(tt.code); got != tt.want {
			t.Errorf("%s: MatchTagsCode(%d) = %v, want %v", tt.name, tt.code, got, tt.want)
		}
	}
	if f.MatchTag("BB") {
		t.Error("MatchTag(BB) = true; the client re-check must reject a hash collision")
	}
	if !slices.Equal(f.Codes(), []int32{2598919, 2112, -2147483648}) {
		t.Errorf("Codes() = %v", f.Codes())
	}
	if !f.MatchProperties(nil) {
		t.Error("MatchProperties = false for a TAG filter")
	}

	none, _ := ParseTagExpression(" || ")
	if none.MatchTagsCode(0) || none.MatchTag("") {
		t.Error("an expression without tags matched")
	}
	all, _ := ParseTagExpression("*")
	if !all.MatchTagsCode(12345) || !all.MatchTag("x") || !all.MatchTagsCode(0) {
		t.Error("* did not match")
	}
}

package filter

import (
	"strings"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// SubAll is the tag expression that matches every message.
const SubAll = "*"

// TagFilter is a parsed TAG expression, the broker side of Java's
// SubscriptionData: the tags in order of first appearance and their hash
// codes.
type TagFilter struct {
	all   bool
	tags  []string
	codes []int32
}

// ParseTagExpression parses a TAG expression as FilterAPI.buildSubscriptionData
// does: "" or exactly "*" matches everything; otherwise the expression is
// split on "||", each part trimmed (String.trim), and empty parts dropped.
// Only an expression made of nothing but "||" separators is an error; one
// that leaves no tags, such as " || ", matches nothing.
func ParseTagExpression(expr string) (TagFilter, error) {
	if expr == "" || expr == SubAll {
		return TagFilter{all: true}, nil
	}
	parts := strings.Split(expr, "||")
	// Java's String.split drops trailing empty strings; none left is an error.
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return TagFilter{}, ErrTagExpression
	}
	var f TagFilter
	for _, p := range parts {
		tag := javaTrim(p)
		if tag == "" || f.MatchTag(tag) {
			continue
		}
		f.tags = append(f.tags, tag)
		code := message.JavaStringHash(tag)
		if !f.hasCode(code) {
			f.codes = append(f.codes, code)
		}
	}
	return f, nil
}

// All reports whether the filter matches every message.
func (f TagFilter) All() bool { return f.all }

// Tags returns the subscribed tags (Java's tagsSet); nil for "*".
func (f TagFilter) Tags() []string { return append([]string(nil), f.tags...) }

// Codes returns the subscribed tag hash codes (Java's codeSet).
func (f TagFilter) Codes() []int32 { return append([]int32(nil), f.codes...) }

// MatchTagsCode is the broker's consume-queue check. Like Java it compares
// only the low 32 bits of code (Long.intValue). Hash collisions pass here;
// the client re-checks the tag string (see MatchTag).
func (f TagFilter) MatchTagsCode(code int64) bool {
	return f.all || f.hasCode(int32(code))
}

// MatchProperties is true: a TAG subscription is decided by the tags code.
func (f TagFilter) MatchProperties(map[string]string) bool { return true }

// MatchTag is the client-side re-check on the message's tag string.
func (f TagFilter) MatchTag(tag string) bool {
	if f.all {
		return true
	}
	for _, t := range f.tags {
		if t == tag {
			return true
		}
	}
	return false
}

func (f TagFilter) hasCode(code int32) bool {
	for _, c := range f.codes {
		if c == code {
			return true
		}
	}
	return false
}

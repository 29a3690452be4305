package filter

import (
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func BenchmarkMatch(b *testing.B) {
	e, err := CompileSQL92("a > 5 AND b = 'x'")
	if err != nil {
		b.Fatal(err)
	}
	props := map[string]string{"a": "10", "b": "x", "TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "0A0B0C"}
	b.ReportAllocs()
	for b.Loop() {
		if !e.Match(props) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileSQL92("a > 5 AND b = 'x'"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatchTagsCode(b *testing.B) {
	f, err := ParseTagExpression("TagA || TagB || TagC")
	if err != nil {
		b.Fatal(err)
	}
	code := message.TagsCode("TagC")
	for b.Loop() {
		if !f.MatchTagsCode(code) {
			b.Fatal("no match")
		}
	}
}

package names

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestTopic(t *testing.T) {
	for _, tc := range []struct {
		name, remark string
	}{
		{"TopicTest", ""},
		{"%RETRY%group-1", ""},
		{"%DLQ%g", ""},
		{"ns%topic|x_y-z", ""},
		{strings.Repeat("t", 127), ""},
		{"", "The specified topic is blank."},
		{"  ", "The specified topic is blank."},
		{strings.Repeat("t", 128), "The specified topic is longer than topic max length."},
		{"../../sentinel", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
		{"/etc", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
		{"a.b", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
		{"a\x00b", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
		{"tópico", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
		// Java checks the characters before the length.
		{strings.Repeat("/", 200), "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
	} {
		err := Topic(tc.name)
		if tc.remark == "" {
			if err != nil {
				t.Errorf("Topic(%q) = %v", tc.name, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.remark || !errors.Is(err, ErrIllegalTopic) {
			t.Errorf("Topic(%q) = %v, want %q", tc.name, err, tc.remark)
		}
	}
}

func TestGroup(t *testing.T) {
	for _, tc := range []struct {
		name, remark string
	}{
		{"CID_RMQ_SYS_TRANS", ""},
		{strings.Repeat("g", 255), ""},
		{"", "the specified group is blank"},
		{strings.Repeat("g", 256), "the specified group is longer than group max length 255."},
		{"../x", "the specified group[../x] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
	} {
		err := Group(tc.name)
		if tc.remark == "" {
			if err != nil {
				t.Errorf("Group(%q) = %v", tc.name, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.remark || !errors.Is(err, ErrIllegalGroup) {
			t.Errorf("Group(%q) = %v, want %q", tc.name, err, tc.remark)
		}
	}
}

// FuzzTopic: whatever is accepted is one local path element.
func FuzzTopic(f *testing.F) {
	for _, s := range []string{"T", "..", "../x", "/", "%RETRY%g", "a|b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Topic(s) != nil {
			return
		}
		if !filepath.IsLocal(s) || filepath.Base(s) != s || s == "." || s == ".." {
			t.Fatalf("accepted %q, which is not a single local path element", s)
		}
	})
}

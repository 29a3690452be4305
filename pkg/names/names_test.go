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

func TestUserTopic(t *testing.T) {
	for _, tc := range []struct {
		name string
		want error // nil, ErrIllegalTopic or ErrReservedTopic
	}{
		{"orders", nil},
		{"RMQ_SYSTEM", nil}, // no underscore after SYS
		{"my_rmq_sys_topic", nil},
		{"a.b", ErrIllegalTopic},
		{"TBW102", ErrReservedTopic},
		{"SCHEDULE_TOPIC_XXXX", ErrReservedTopic},
		{"RMQ_SYS_TRANS_HALF_TOPIC", ErrReservedTopic},
		{"RMQ_SYS_anything", ErrReservedTopic},
		{"rmq_sys_anything", ErrReservedTopic},
		{"%RETRY%billing", ErrReservedTopic},
		{"%DLQ%billing", ErrReservedTopic},
	} {
		err := UserTopic(tc.name)
		if (tc.want == nil) != (err == nil) || (err != nil && !errors.Is(err, tc.want)) {
			t.Errorf("UserTopic(%q) = %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, s := range SystemTopics {
		if err := UserTopic(s); !errors.Is(err, ErrReservedTopic) || err.Error() != "The topic["+s+"] is conflict with system topic." {
			t.Errorf("UserTopic(%q) = %v", s, err)
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

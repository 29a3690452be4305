package message

import (
	"slices"
	"testing"
)

// Java's String.hashCode of a few strings: ASCII, a collision, a non-ASCII character
// and one outside the BMP (two UTF-16 code units, 0xD83D 0xDE00).
func TestJavaStringHash(t *testing.T) {
	for s, want := range map[string]int32{
		"": 0, "a": 97, "hello": 99162322, "Aa": 2112, "BB": 2112, "é": 233, "😀": 1772899,
		"TopicTest#KEY-1": javaHashByUnits("TopicTest#KEY-1"),
	} {
		if got := JavaStringHash(s); got != want {
			t.Errorf("JavaStringHash(%q) = %d, want %d", s, got, want)
		}
		if got := JavaStringHash([]byte(s)); got != want {
			t.Errorf("JavaStringHash([]byte(%q)) = %d, want %d", s, got, want)
		}
	}
}

// javaHashByUnits is String.hashCode spelled out for ASCII: s[0]*31^(n-1) + ... + s[n-1].
func javaHashByUnits(s string) int32 {
	var h int32
	for _, c := range []byte(s) {
		h = h*31 + int32(c)
	}
	return h
}

// Hashing a string in parts gives the hash of the whole, whatever the parts hold.
func TestJavaHashAppend(t *testing.T) {
	parts := []string{"", "topic", "#", "é😀", "\xff\xfe", "KEY 1"}
	for _, a := range parts {
		for _, b := range parts {
			if got, want := JavaHashAppend(JavaStringHash(a), b), JavaStringHash(a+b); got != want {
				t.Errorf("JavaHashAppend(JavaStringHash(%q), %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// KEYS splits on spaces only, as Java's index service does, and yields no empty key.
func TestKeysSeq(t *testing.T) {
	var got []string
	for k := range KeysSeq([]byte(" a b  c\td ")) {
		got = append(got, string(k))
	}
	if want := []string{"a", "b", "c\td"}; !slices.Equal(got, want) {
		t.Errorf("KeysSeq = %q, want %q", got, want)
	}
	for range KeysSeq(nil) {
		t.Error("KeysSeq(nil) yielded a key")
	}
}

package message

import "unicode/utf16"

// JavaStringHash returns Java's String.hashCode of s (over UTF-16 code
// units, with int32 overflow).
func JavaStringHash[T ~string | ~[]byte](s T) int32 { return JavaHashAppend(0, s) }

// JavaHashAppend returns the String.hashCode of a string of hash h followed by s:
// JavaHashAppend(JavaStringHash(a), b) == JavaStringHash(a+b), without making a+b.
func JavaHashAppend[T ~string | ~[]byte](h int32, s T) int32 {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return javaHashSlow(h, string(s[i:])) // i is a rune's start: all before is ASCII
		}
		h = 31*h + int32(c)
	}
	return h
}

func javaHashSlow(h int32, s string) int32 {
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// TagsCode is the consume-queue tag hash of a TAGS value: 0 for no tag,
// else Java's String.hashCode widened to int64.
func TagsCode(tags string) int64 {
	if tags == "" {
		return 0
	}
	return int64(JavaStringHash(tags))
}

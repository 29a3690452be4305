package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Encode returns v as compact JSON, the form every client parses.
func Encode(v any) ([]byte, error) {
	return json.Marshal(v)
}

// MustEncode is Encode for values that always marshal (the types of this package).
func MustEncode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("protocol: encode %T: %v", v, err))
	}
	return b
}

// Decode parses a fastjson or standard JSON body into v. Bare object keys, as fastjson
// writes integer map keys, are quoted first.
func Decode(data []byte, v any) error {
	return json.Unmarshal(QuoteBareKeys(data), v)
}

// QuoteBareKeys returns data with every unquoted object key quoted ({0:"a"} becomes
// {"0":"a"}). Text inside strings is left alone; data without bare keys comes back as is.
func QuoteBareKeys(data []byte) []byte {
	if !hasBareKey(data) {
		return data
	}
	out := make([]byte, 0, len(data)+16)
	var stack []byte // open containers: '{' or '['
	expectKey := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case '"':
			end := stringEnd(data, i)
			out = append(out, data[i:end]...)
			i = end - 1
			expectKey = false
			continue
		case '{', '[':
			stack = append(stack, c)
			expectKey = c == '{'
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		case ' ', '\t', '\n', '\r':
		default:
			if expectKey {
				j := i
				for j < len(data) && data[j] != ':' && !isSpace(data[j]) {
					j++
				}
				out = append(out, '"')
				out = append(out, data[i:j]...)
				out = append(out, '"')
				i = j - 1
				expectKey = false
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// stringEnd returns the index just past the string literal starting at data[i].
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// hasBareKey is a cheap pre-check: a '{' or ',' followed (after spaces) by something that
// can start a bare key, outside strings.
func hasBareKey(data []byte) bool {
	if !bytes.ContainsAny(data, "{,") {
		return false
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c == '"' {
			i = stringEnd(data, i) - 1
			continue
		}
		if c != '{' && c != ',' {
			continue
		}
		j := i + 1
		for j < len(data) && isSpace(data[j]) {
			j++
		}
		if j < len(data) && (data[j] == '-' || data[j] >= '0' && data[j] <= '9' || data[j] == '_' ||
			data[j] >= 'a' && data[j] <= 'z' || data[j] >= 'A' && data[j] <= 'Z') {
			return true
		}
	}
	return false
}

package remoting

import (
	"bytes"
	"encoding/binary"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// decodeJSONHeaderFast decodes the headers clients actually send (the fields of a
// RemotingCommand, in any order, string extFields) several times faster than
// encoding/json. It reports false for anything else, valid or not: unknown or repeated
// keys, escapes of surrogates, invalid UTF-8, numbers with fractions or out of range,
// nulls where encoding/json would keep a zero value. decodeJSONHeader then falls back to
// encoding/json, so the result is always encoding/json's. The extFields of a request
// whose code is in unmappedCodes, and comes before them as clients write it, are left
// unmapped (Command.ExtFields).
func decodeJSONHeaderFast(b []byte, unmappedCodes []int16) (*Command, bool) {
	// One string for the whole header, which keys and values slice: one allocation
	// instead of one per string.
	s := jsonScanner{b: b, src: string(b)}
	if !s.consume('{') {
		return nil, false
	}
	c := &Command{}
	if !s.consume('}') {
		var seen uint8
		for {
			key, ok := s.str()
			if !ok || !s.consume(':') {
				return nil, false
			}
			var bit uint8
			switch key {
			case "code":
				bit = codeBit
				var n int64
				n, ok = s.int(16)
				c.Code = int16(n)
			case "flag":
				bit = 1 << 1
				var n int64
				n, ok = s.int(32)
				c.Flag = int32(n)
			case "opaque":
				bit = 1 << 2
				var n int64
				n, ok = s.int(32)
				c.Opaque = int32(n)
			case "version":
				bit = 1 << 3
				var n int64
				n, ok = s.int(16)
				c.Version = int16(n)
			case "language":
				bit = 1 << 4
				switch s.peek() {
				case '"':
					var name string
					name, ok = s.str()
					c.Language = parseLanguage(name)
				case 'n':
					ok = s.null()
				case '-':
					ok = false // encoding/json refuses even -0 for a uint8
				default:
					var n int64
					n, ok = s.int(16)
					ok = ok && n <= 255
					c.Language = parseLanguage(LanguageCode(n).String())
				}
			case "remark":
				bit = 1 << 5
				if s.peek() == 'n' {
					ok = s.null()
				} else {
					c.Remark, ok = s.str()
				}
			case "extFields":
				bit = 1 << 6
				switch {
				case s.peek() == 'n':
					ok = s.null()
				case seen&codeBit != 0 && slices.Contains(unmappedCodes, c.Code):
					c.fieldList, ok = s.fields()
				default:
					c.ExtFields, ok = s.stringMap()
				}
			case "serializeTypeCurrentRPC":
				bit = 1 << 7
				if s.peek() == 'n' {
					ok = s.null()
				} else {
					_, ok = s.str()
				}
			default:
				return nil, false
			}
			if !ok || seen&bit != 0 {
				return nil, false
			}
			seen |= bit
			if s.consume(',') {
				continue
			}
			if s.consume('}') {
				break
			}
			return nil, false
		}
	}
	s.skipSpace()
	if s.i != len(s.b) {
		return nil, false
	}
	if c.ExtFields == nil && c.fieldList == nil {
		c.ExtFields = map[string]string{}
	}
	return c, true
}

// codeBit marks "code" among the keys decodeJSONHeaderFast has seen.
const codeBit = 1 << 0

// jsonScanner reads the subset of JSON decodeJSONHeaderFast accepts.
type jsonScanner struct {
	b   []byte
	src string // b as a string
	i   int
}

func (s *jsonScanner) skipSpace() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return // the common case: clients write no white space
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *jsonScanner) peek() byte {
	s.skipSpace()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// consume skips white space and c, reporting whether c was there.
func (s *jsonScanner) consume(c byte) bool {
	if s.peek() == c && s.i < len(s.b) {
		s.i++
		return true
	}
	return false
}

func (s *jsonScanner) null() bool {
	s.skipSpace()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// int reads an integer without fraction or exponent that fits in bits.
func (s *jsonScanner) int(bits int) (int64, bool) {
	s.skipSpace()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || s.b[digits] == '0' && s.i-digits > 1 {
		return 0, false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	n, err := parseInt(s.b[start:s.i], bits)
	return n, err == nil
}

// str reads a string of valid UTF-8 whose escapes are not surrogates.
func (s *jsonScanner) str() (string, bool) {
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start := s.i + 1
	b, i := s.b, plainRun(s.b, start)
	var high byte // the OR of the bytes past the run: under utf8.RuneSelf, all ASCII and valid
	for i < len(b) {
		c := b[i]
		if !jsonSpecial[c] {
			high |= c
			i++
			continue
		}
		s.i = i
		switch c {
		case '"':
			s.i++
			if high >= utf8.RuneSelf && !utf8.Valid(b[start:i]) {
				return "", false
			}
			return s.src[start:i], true
		case '\\':
			return s.unescape(start)
		}
		return "", false // a control byte
	}
	return "", false
}

// plainRun returns the end of the run of plain ASCII text (no quote, backslash, control
// or non-ASCII byte) from b[i], read eight bytes at a time; it stops short of a last
// eight it cannot read whole, which the callers' byte loops read.
func plainRun(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if w&highs != 0 {
			break
		}
		// With every byte under 0x80, x - n*ones borrows into a byte's top bit exactly
		// where that byte of x is under n: a control byte, or a zero the XOR with
		// quotes or backslashes left where one was.
		control := w - 0x20*ones
		quote := (w ^ '"'*ones) - ones
		backslash := (w ^ '\\'*ones) - ones
		if (control|quote|backslash)&highs != 0 {
			break
		}
	}
	return i
}

// jsonSpecial marks the bytes that end a run of a JSON string's plain text: the quote,
// the backslash and the control bytes, which must be escaped.
var jsonSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// unescape continues str at its first backslash.
func (s *jsonScanner) unescape(start int) (string, bool) {
	// The raw text up to the closing quote bounds the unescaped length: one allocation.
	end := s.i
	for end < len(s.b) && s.b[end] != '"' {
		if s.b[end] == '\\' {
			end++
		}
		end++
	}
	buf := make([]byte, 0, min(end, len(s.b))-start)
	buf = append(buf, s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			// Escapes append whole runes, so buf is valid iff the raw runs are.
			if !utf8.Valid(buf) {
				return "", false
			}
			// buf is this string's alone and never written again: no copy.
			return unsafe.String(unsafe.SliceData(buf), len(buf)), true
		case c < 0x20:
			return "", false
		case c != '\\':
			run, i := s.i, plainRun(s.b, s.i)
			for i < len(s.b) && !jsonSpecial[s.b[i]] {
				i++
			}
			s.i = i
			buf = append(buf, s.b[run:i]...)
			continue
		}
		if s.i+1 >= len(s.b) {
			return "", false
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if len(s.b)-s.i < 4 {
				return "", false
			}
			var r rune
			for _, h := range s.b[s.i : s.i+4] {
				switch {
				case '0' <= h && h <= '9':
					r = r<<4 | rune(h-'0')
				case 'a' <= h && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case 'A' <= h && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return "", false
				}
			}
			if 0xd800 <= r && r <= 0xdfff {
				return "", false // surrogates: encoding/json pairs or replaces them
			}
			buf = utf8.AppendRune(buf, r)
			s.i += 4
		default:
			return "", false
		}
	}
	return "", false
}

// jsonFieldCount estimates the entries of the JSON object b starts in, up to
// maxFieldsHint, so that its map is made at its size once: growing it was a noticeable
// part of decoding a send. The colons before the first '}' are a bound good enough for a
// hint (values rarely hold either).
func jsonFieldCount(b []byte) int {
	if end := bytes.IndexByte(b, '}'); end >= 0 {
		b = b[:end]
	}
	return min(bytes.Count(b, []byte{':'}), maxFieldsHint)
}

// fields reads an object whose values are all strings into a slice, nil when empty.
func (s *jsonScanner) fields() ([]field, bool) {
	fs := make([]field, 0, jsonFieldCount(s.b[s.i:]))
	ok := s.object(func(k, v string) { fs = append(fs, field{k, v}) })
	if len(fs) == 0 {
		fs = nil
	}
	return fs, ok
}

// stringMap reads an object whose values are all strings.
func (s *jsonScanner) stringMap() (map[string]string, bool) {
	m := make(map[string]string, jsonFieldCount(s.b[s.i:]))
	ok := s.object(func(k, v string) { m[k] = v })
	return m, ok
}

// object reads an object whose values are all strings, handing put each entry.
func (s *jsonScanner) object(put func(k, v string)) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		k, ok := s.str()
		if !ok || !s.consume(':') {
			return false
		}
		v, ok := s.str()
		if !ok {
			return false
		}
		put(k, v)
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

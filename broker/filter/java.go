package filter

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the few pieces of java.lang behaviour the filters depend on:
// String.trim, Integer/Long.parseLong, Double.valueOf,
// Boolean.valueOf and Double.compareTo.

// javaTrim is String.trim: it strips every char <= ' ' from both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// javaParseInteger is Integer.parseInt (min, max = int32 bounds) or
// Long.parseLong (int64 bounds) in radix 10: one optional sign, then digits as
// Character.digit sees them, which includes non-ASCII BMP decimal digits.
func javaParseInteger(s string, min, max int64) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	// Accumulate negatively, as Java does, so that min itself fits.
	limit := -max
	if neg {
		limit = min
	}
	var n int64
	for _, r := range s {
		d, ok := javaDigit(r)
		if !ok || n < limit/10 {
			return 0, false
		}
		n *= 10
		if n < limit+int64(d) {
			return 0, false
		}
		n -= int64(d)
	}
	if neg {
		return n, true
	}
	return -n, true
}

// javaDigit is Character.digit(ch, 10) for a char (never a surrogate pair).
func javaDigit(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r > 0xFFFF || r == utf8.RuneError || !unicode.IsDigit(r) {
		return 0, false
	}
	// Unicode decimal digits come in runs of ten, zero first.
	z := r
	for unicode.IsDigit(z - 1) {
		z--
	}
	return int(r-z) % 10, true
}

// javaParseDouble is Double.valueOf: after String.trim it takes an optional
// sign and then NaN, Infinity, a decimal number with optional exponent, or a
// hexadecimal float with a binary exponent; an f, F, d or D suffix is allowed
// after the numeric forms. Out-of-range values become infinities or zero.
func javaParseDouble(s string) (float64, bool) {
	s = javaTrim(s)
	body := s
	if body != "" && (body[0] == '-' || body[0] == '+') {
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(s); n > 0 && strings.IndexByte("fFdD", s[n-1]) >= 0 {
		s, body = s[:n-1], body[:len(body)-1]
	}
	var ok bool
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		ok = isJavaHexFloat(body[2:])
	} else {
		ok = isJavaDecimalFloat(body)
	}
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// isJavaDecimalFloat reports whether s is digits [. digits] [e [sign] digits]
// with at least one mantissa digit.
func isJavaDecimalFloat(s string) bool {
	i, digits := scanDigits(s, 0, isDecimal)
	if i < len(s) && s[i] == '.' {
		var frac int
		i, frac = scanDigits(s, i+1, isDecimal)
		digits += frac
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		return isSignedExponent(s[i+1:])
	}
	return i == len(s)
}

// isJavaHexFloat reports whether s (after 0x) is hexdigits [. hexdigits]
// p [sign] digits with at least one mantissa digit.
func isJavaHexFloat(s string) bool {
	i, digits := scanDigits(s, 0, isHex)
	if i < len(s) && s[i] == '.' {
		var frac int
		i, frac = scanDigits(s, i+1, isHex)
		digits += frac
	}
	if digits == 0 || i >= len(s) || (s[i] != 'p' && s[i] != 'P') {
		return false
	}
	return isSignedExponent(s[i+1:])
}

func isSignedExponent(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	i, n := scanDigits(s, 0, isDecimal)
	return n > 0 && i == len(s)
}

func scanDigits(s string, i int, ok func(byte) bool) (end, n int) {
	for end = i; end < len(s) && ok(s[end]); end++ {
	}
	return end, end - i
}

func isDecimal(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDecimal(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

// javaBoolean is Boolean.valueOf(String): true only for "true" in any case.
func javaBoolean(s string) bool { return strings.EqualFold(s, "true") }

// compareDouble is Double.compareTo: -0.0 sorts before 0.0, and NaN equals
// itself and sorts after +Infinity.
func compareDouble(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	x, y := javaDoubleBits(a), javaDoubleBits(b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// javaDoubleBits is Double.doubleToLongBits, which folds every NaN into one.
func javaDoubleBits(f float64) int64 {
	if math.IsNaN(f) {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

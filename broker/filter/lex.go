package filter

import "strings"

// tokenKind names the tokens of SelectorParser.jj.
type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokIdent
	tokDecimal // 0 | [1-9][0-9]*[lL]?
	tokFloat   // 5.5  5.  .5  5E10, with optional exponent
	tokString  // 'a''b'
	tokNot
	tokAnd
	tokOr
	tokBetween
	tokIn
	tokTrue
	tokFalse
	tokNull
	tokIs
	tokEQ
	tokNE
	tokGT
	tokGE
	tokLT
	tokLE
	tokLParen
	tokRParen
	tokComma
	tokPlus
	tokMinus
)

var keywords = map[string]tokenKind{
	"NOT": tokNot, "AND": tokAnd, "OR": tokOr, "BETWEEN": tokBetween, "IN": tokIn,
	"TRUE": tokTrue, "FALSE": tokFalse, "NULL": tokNull, "IS": tokIs,
}

// token is one lexeme; pos is its byte offset in the source and text its
// source text (for a string literal, the decoded value is in str).
type token struct {
	kind tokenKind
	pos  int
	text string
	str  string
}

// lex splits src into tokens, ending with tokEOF. Like the Java lexer it
// skips the whitespace " \t\n\r\f", "--" comments that end with a line
// break and "/* */" comments.
func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for {
		i = skipSpace(src, i)
		if i >= len(src) {
			return append(toks, token{kind: tokEOF, pos: len(src)}), nil
		}
		t, err := lexOne(src, i)
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		i = t.pos + len(t.text)
	}
}

// skipSpace returns the offset of the first byte at or after i that is not
// whitespace or part of a comment. An unterminated comment is left in place.
func skipSpace(src string, i int) int {
	for i < len(src) {
		switch {
		case strings.IndexByte(" \t\n\r\f", src[i]) >= 0:
			i++
		case strings.HasPrefix(src[i:], "--"):
			nl := strings.IndexAny(src[i:], "\n\r")
			if nl < 0 {
				return i // no line break: two minus signs
			}
			i += nl + 1
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return i
			}
			i += end + 4
		default:
			return i
		}
	}
	return i
}

func lexOne(src string, i int) (token, error) {
	c := src[i]
	switch {
	case c == '\'':
		return lexString(src, i)
	case isDecimal(c) || (c == '.' && i+1 < len(src) && isDecimal(src[i+1])):
		return lexNumber(src, i), nil
	case isIdentStart(c):
		j := i + 1
		for j < len(src) && (isIdentStart(src[j]) || isDecimal(src[j])) {
			j++
		}
		t := token{kind: tokIdent, pos: i, text: src[i:j]}
		if k, ok := keywords[strings.ToUpper(t.text)]; ok {
			t.kind = k
		}
		return t, nil
	}
	for _, op := range operators {
		if strings.HasPrefix(src[i:], op.text) {
			return token{kind: op.kind, pos: i, text: op.text}, nil
		}
	}
	if strings.HasPrefix(src[i:], "/*") {
		return token{}, syntaxError(src, i, "unterminated comment")
	}
	return token{}, syntaxError(src, i, "unexpected character %s", quoteChar(src[i:]))
}

// operators lists two-character operators before their one-character prefixes.
var operators = []struct {
	text string
	kind tokenKind
}{
	{"<>", tokNE}, {">=", tokGE}, {"<=", tokLE}, {"=", tokEQ}, {">", tokGT}, {"<", tokLT},
	{"(", tokLParen}, {")", tokRParen}, {",", tokComma}, {"+", tokPlus}, {"-", tokMinus},
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// lexString reads a quoted string in which ” stands for one quote.
func lexString(src string, i int) (token, error) {
	var b strings.Builder
	start := i + 1
	for j := start; j < len(src); j++ {
		if src[j] != '\'' {
			continue
		}
		if j+1 < len(src) && src[j+1] == '\'' {
			b.WriteString(src[start : j+1])
			start = j + 2
			j++
			continue
		}
		b.WriteString(src[start:j])
		return token{kind: tokString, pos: i, text: src[i : j+1], str: b.String()}, nil
	}
	return token{}, syntaxError(src, i, "unterminated string literal")
}

// lexNumber takes the longest decimal or floating-point literal at i, as
// the Java lexer does: "0" alone is a decimal literal (so "012" is two), but
// "012.5" is a float.
func lexNumber(src string, i int) token {
	j, _ := scanDigits(src, i, isDecimal)
	float := false
	if j < len(src) && src[j] == '.' {
		j, _ = scanDigits(src, j+1, isDecimal)
		float = true
	}
	if e := exponentEnd(src, j); e > j {
		j, float = e, true
	}
	if float {
		return token{kind: tokFloat, pos: i, text: src[i:j]}
	}
	if src[i] == '0' {
		return token{kind: tokDecimal, pos: i, text: "0"}
	}
	if j < len(src) && src[j]|0x20 == 'l' {
		j++
	}
	return token{kind: tokDecimal, pos: i, text: src[i:j]}
}

// exponentEnd returns the end of an exponent "E[+-]digits" at i, or i.
func exponentEnd(src string, i int) int {
	if i >= len(src) || src[i]|0x20 != 'e' {
		return i
	}
	j := i + 1
	if j < len(src) && (src[j] == '+' || src[j] == '-') {
		j++
	}
	end, n := scanDigits(src, j, isDecimal)
	if n == 0 {
		return i
	}
	return end
}

package filter

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

var (
	// ErrSyntax is wrapped by every error CompileSQL92 returns.
	ErrSyntax = errors.New("SQL92 expression: invalid")
	// ErrEvaluation is wrapped by the errors Evaluate returns when Java
	// would have thrown (a property value that cannot be converted for a
	// comparison); such a message is not delivered.
	ErrEvaluation = errors.New("SQL92 expression: evaluation failed")
	// ErrTagExpression is returned for a tag expression made only of "||".
	ErrTagExpression = errors.New("filter: tag expression has no tags")
	// ErrExpressionType is returned by New for a type other than TAG or SQL92.
	ErrExpressionType = errors.New("filter: unsupported expression type")
)

// SyntaxError is a compile error at Pos, the 1-based character position in
// the expression.
type SyntaxError struct {
	Pos int
	Msg string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("SQL92 expression: %s at position %d", e.Msg, e.Pos)
}

func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// syntaxError builds a SyntaxError at byte offset off of src.
func syntaxError(src string, off int, format string, args ...any) error {
	return &SyntaxError{
		Pos: utf8.RuneCountInString(src[:off]) + 1,
		Msg: fmt.Sprintf(format, args...),
	}
}

// quoteChar quotes the first character of s for an error message.
func quoteChar(s string) string {
	r, _ := utf8.DecodeRuneInString(s)
	return strconv.QuoteRune(r)
}

// describe names a token for an error message, shortening long literals.
func describe(t token) string {
	if t.kind == tokEOF {
		return "end of expression"
	}
	text := t.text
	if utf8.RuneCountInString(text) > 24 {
		r := []rune(text)
		text = string(r[:21]) + "..."
	}
	if t.kind == tokString {
		return "string " + text
	}
	return "token '" + text + "'"
}

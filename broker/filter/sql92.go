package filter

// Truth is the three-valued result of a SQL92 expression.
type Truth int8

const (
	Unknown Truth = iota // null: a missing property decided the result
	False
	True
)

func (t Truth) String() string {
	switch t {
	case False:
		return "FALSE"
	case True:
		return "TRUE"
	}
	return "UNKNOWN"
}

// Expression is a compiled SQL92 expression. It is immutable and safe for
// concurrent use.
type Expression struct {
	src  string
	root node
}

// CompileSQL92 parses expr. Errors are *SyntaxError values (wrapping
// ErrSyntax) that give the position and the problem.
func CompileSQL92(expr string) (*Expression, error) {
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	p := &parser{src: expr, toks: toks}
	root, err := p.selector()
	if err != nil {
		return nil, err
	}
	return &Expression{src: expr, root: root}, nil
}

// String returns the source text of the expression.
func (e *Expression) String() string { return e.src }

// Match reports whether a message with the given properties is delivered:
// only when the expression evaluates to TRUE.
func (e *Expression) Match(props map[string]string) bool {
	v, err := e.root.eval(props)
	return err == nil && v.isTrue()
}

// Evaluate returns the expression's value for props. An error (wrapping
// ErrEvaluation) means Java would have thrown while evaluating, for example
// on "a > 5" with a = 'abc'; Match treats that as no match.
func (e *Expression) Evaluate(props map[string]string) (Truth, error) {
	v, err := e.root.eval(props)
	switch {
	case err != nil:
		return Unknown, err
	case v.isTrue():
		return True, nil
	case v.isFalse():
		return False, nil
	}
	return Unknown, nil
}

package filter

import "fmt"

// Expression types a consumer subscribes with (Java's ExpressionType).
const (
	TypeTag   = "TAG"
	TypeSQL92 = "SQL92"
)

// Filter decides which messages of a topic a subscription receives. The
// pull path calls MatchTagsCode with the consume-queue entry's tags code
// first and, for messages that pass, MatchProperties with the decoded
// message properties (which hold the tags under "TAGS").
type Filter interface {
	MatchTagsCode(code int64) bool
	MatchProperties(props map[string]string) bool
}

// New builds the filter of one subscription. expressionType is "TAG" or ""
// for a tag expression, "SQL92" for a SQL92 expression (the broker should
// refuse it unless enablePropertyFilter is set); the names are case-sensitive
// as in Java.
func New(expressionType, expression string) (Filter, error) {
	switch expressionType {
	case "", TypeTag:
		f, err := ParseTagExpression(expression)
		if err != nil {
			return nil, err
		}
		return f, nil
	case TypeSQL92:
		e, err := CompileSQL92(expression)
		if err != nil {
			return nil, err
		}
		return sqlFilter{e}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrExpressionType, expressionType)
}

// sqlFilter is a SQL92 subscription. Java 4.9 can also pre-filter with a
// bloom filter kept in the consume-queue extension; this broker does not,
// so every tags code passes and the expression decides.
type sqlFilter struct{ *Expression }

func (sqlFilter) MatchTagsCode(int64) bool { return true }

func (f sqlFilter) MatchProperties(props map[string]string) bool { return f.Match(props) }

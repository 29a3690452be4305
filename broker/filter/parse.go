package filter

import (
	"math"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of parentheses and prefix operators, so that
// no input can exhaust the stack. Java has no such limit.
const maxDepth = 100

// listAsSet is the IN list length from which a map is used, as Java does.
const listAsSet = 5

// parser is a recursive-descent parser over the tokens of one expression.
// Each method parses one rule of the grammar in doc.go.
type parser struct {
	src   string
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) errorAt(t token, format string, args ...any) error {
	return syntaxError(p.src, t.pos, format, args...)
}

func (p *parser) unexpected(t token) error {
	return p.errorAt(t, "unexpected %s", describe(t))
}

func (p *parser) expect(k tokenKind, what string) (token, error) {
	t := p.next()
	if t.kind != k {
		return t, p.errorAt(t, "expected %s but found %s", what, describe(t))
	}
	return t, nil
}

// selector := or EOF
func (p *parser) selector() (node, error) {
	start := p.peek()
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.unexpected(t)
	}
	return p.asBoolean(n, start, "the expression")
}

// or := and { OR and }
func (p *parser) or() (node, error) {
	return p.logic(tokOr, p.and)
}

// and := equality { AND equality }
func (p *parser) and() (node, error) {
	return p.logic(tokAnd, p.equality)
}

// logic parses a chain of one logical operator into a single n-ary node.
func (p *parser) logic(op tokenKind, operand func() (node, error)) (node, error) {
	start := p.peek()
	first, err := operand()
	if err != nil || p.peek().kind != op {
		return first, err
	}
	opText := p.peek().text
	if first, err = p.asBoolean(first, start, "the left operand of "+opText); err != nil {
		return nil, err
	}
	xs := flatten(op, nil, first)
	for p.peek().kind == op {
		opTok := p.next()
		start := p.peek()
		x, err := operand()
		if err != nil {
			return nil, err
		}
		if x, err = p.asBoolean(x, start, "the right operand of "+opTok.text); err != nil {
			return nil, err
		}
		xs = flatten(op, xs, x)
	}
	if op == tokAnd {
		return &andNode{xs: xs}, nil
	}
	return &orNode{xs: xs}, nil
}

// flatten appends x to xs, or x's operands if x is the same operator.
func flatten(op tokenKind, xs []node, x node) []node {
	switch n := x.(type) {
	case *andNode:
		if op == tokAnd {
			return append(xs, n.xs...)
		}
	case *orNode:
		if op == tokOr {
			return append(xs, n.xs...)
		}
	}
	return append(xs, x)
}

// equality := comparison { ("=" | "<>") comparison | IS [NOT] NULL }
func (p *parser) equality() (node, error) {
	left, err := p.comparison()
	if err != nil {
		return nil, err
	}
	for {
		op := p.peek()
		switch op.kind {
		case tokEQ, tokNE:
			p.next()
			right, err := p.comparison()
			if err != nil {
				return nil, err
			}
			if err := p.checkEqualOperands(op, left, right); err != nil {
				return nil, err
			}
			left = &equalNode{l: left, r: right}
			if op.kind == tokNE {
				left = &notNode{x: left}
			}
		case tokIs:
			p.next()
			not := p.peek().kind == tokNot
			if not {
				p.next()
			}
			if _, err := p.expect(tokNull, "NULL"); err != nil {
				return nil, err
			}
			left = &equalNode{l: left, r: &literalNode{v: nullValue}}
			if not {
				left = &notNode{x: left}
			}
		default:
			return left, nil
		}
	}
}

// comparison := unary { ordering-op unary | [NOT] BETWEEN unary AND unary
// | [NOT] IN "(" string { "," string } ")" }
func (p *parser) comparison() (node, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		op := p.peek()
		not := false
		if op.kind == tokNot {
			switch p.toks[p.i+1].kind {
			case tokBetween, tokIn:
				p.next()
				not = true
			default:
				return nil, p.errorAt(p.toks[p.i+1], "expected BETWEEN or IN after NOT but found %s", describe(p.toks[p.i+1]))
			}
		}
		switch t := p.peek(); t.kind {
		case tokGT, tokGE, tokLT, tokLE:
			p.next()
			right, err := p.unary()
			if err != nil {
				return nil, err
			}
			if left, err = p.ordering(t, left, right); err != nil {
				return nil, err
			}
		case tokBetween:
			p.next()
			left, err = p.between(t, left, not)
		case tokIn:
			p.next()
			left, err = p.in(op, left, not)
		default:
			return left, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// between parses "low AND high" after [NOT] BETWEEN. BETWEEN is
// value >= low AND value <= high; NOT BETWEEN is value < low OR value > high.
func (p *parser) between(op token, value node, not bool) (node, error) {
	low, err := p.unary()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tokAnd, "AND after BETWEEN"); err != nil {
		return nil, err
	}
	high, err := p.unary()
	if err != nil {
		return nil, err
	}
	if not {
		lt, err := p.ordering(token{kind: tokLT, pos: op.pos, text: "NOT BETWEEN"}, value, low)
		if err != nil {
			return nil, err
		}
		gt, err := p.ordering(token{kind: tokGT, pos: op.pos, text: "NOT BETWEEN"}, value, high)
		if err != nil {
			return nil, err
		}
		return &orNode{xs: []node{lt, gt}}, nil
	}
	ge, err := p.ordering(token{kind: tokGE, pos: op.pos, text: "BETWEEN"}, value, low)
	if err != nil {
		return nil, err
	}
	le, err := p.ordering(token{kind: tokLE, pos: op.pos, text: "BETWEEN"}, value, high)
	if err != nil {
		return nil, err
	}
	// Java rejects literal bounds in the wrong order (a negated literal is
	// not a literal there, so "BETWEEN 5 AND -1" is accepted).
	l, lok := low.(*literalNode)
	h, hok := high.(*literalNode)
	if lok && hok {
		if c, _ := compareValues(h.v, l.v); c < 0 {
			return nil, p.errorAt(op, "BETWEEN bounds %s and %s are in the wrong order", l.v, h.v)
		}
	}
	return &andNode{xs: []node{ge, le}}, nil
}

// in parses the string list after [NOT] IN; the left side must be a property.
func (p *parser) in(op token, left node, not bool) (node, error) {
	prop, ok := left.(*propertyNode)
	if !ok {
		return nil, p.errorAt(op, "IN needs a property name on its left")
	}
	if _, err := p.expect(tokLParen, "'(' after IN"); err != nil {
		return nil, err
	}
	n := &inNode{prop: prop, negate: not}
	for {
		s, err := p.expect(tokString, "a string literal in the IN list")
		if err != nil {
			return nil, err
		}
		n.list = append(n.list, s.str)
		if p.peek().kind != tokComma {
			break
		}
		p.next()
	}
	if _, err := p.expect(tokRParen, "',' or ')' in the IN list"); err != nil {
		return nil, err
	}
	if len(n.list) >= listAsSet {
		n.set = make(map[string]struct{}, len(n.list))
		for _, s := range n.list {
			n.set[s] = struct{}{}
		}
	}
	return n, nil
}

// unary := "+" unary | "-" unary | NOT unary | primary
func (p *parser) unary() (node, error) {
	t := p.peek()
	switch t.kind {
	case tokPlus, tokMinus, tokNot:
	default:
		return p.primary()
	}
	if err := p.enter(t); err != nil {
		return nil, err
	}
	defer p.leave()
	p.next()
	start := p.peek()
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case tokPlus:
		return x, nil
	case tokMinus:
		return &negateNode{x: x}, nil
	}
	if x, err = p.asBoolean(x, start, "the operand of NOT"); err != nil {
		return nil, err
	}
	return &notNode{x: x}, nil
}

// primary := literal | identifier | "(" or ")"
func (p *parser) primary() (node, error) {
	t := p.next()
	switch t.kind {
	case tokIdent:
		return &propertyNode{name: t.text}, nil
	case tokString:
		return &literalNode{v: value{kind: kindString, s: t.str}}, nil
	case tokTrue:
		return &literalNode{v: trueValue}, nil
	case tokFalse:
		return &literalNode{v: falseValue}, nil
	case tokNull:
		return &literalNode{v: nullValue}, nil
	case tokDecimal:
		return p.decimal(t)
	case tokFloat:
		return p.float(t)
	case tokLParen:
		if err := p.enter(t); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "')'"); err != nil {
			return nil, err
		}
		return x, nil
	}
	return nil, p.unexpected(t)
}

func (p *parser) enter(t token) error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorAt(t, "expression nested more than %d levels deep", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// decimal converts a decimal literal: Integer when it fits, else Long; an
// L suffix is ignored; beyond Long's range is an error.
func (p *parser) decimal(t token) (node, error) {
	n, err := strconv.ParseInt(strings.TrimRight(t.text, "lL"), 10, 64)
	if err != nil {
		return nil, p.errorAt(t, "number %s is out of range", t.text)
	}
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return &literalNode{v: value{kind: kindInt, n: n}}, nil
	}
	return &literalNode{v: value{kind: kindLong, n: n}}, nil
}

// float converts a floating-point literal to a Double; overflow is an error.
func (p *parser) float(t token) (node, error) {
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil {
		return nil, p.errorAt(t, "number %s is out of range", t.text)
	}
	return &literalNode{v: doubleValue(f)}, nil
}

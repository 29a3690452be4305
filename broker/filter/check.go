package filter

// The operand checks the Java parser makes while building the tree. They
// look at node types only, so "(5)" and "+5" count as the literal 5 while
// "-5" does not.

// isBooleanNode reports whether n is what Java calls a BooleanExpression:
// a comparison, logical operator, IN, or the literals TRUE, FALSE and NULL.
func isBooleanNode(n node) bool {
	switch n := n.(type) {
	case *equalNode, *compareNode, *andNode, *orNode, *notNode, *boolCastNode, *inNode:
		return true
	case *literalNode:
		return n.v.isBoolean()
	}
	return false
}

// asBoolean makes n usable as a condition: boolean nodes as they are, a bare
// property through a boolean cast; anything else (a number, a string, a
// negation) is an error at start.
func (p *parser) asBoolean(n node, start token, what string) (node, error) {
	if isBooleanNode(n) {
		return n, nil
	}
	if _, ok := n.(*propertyNode); ok {
		return &boolCastNode{x: n}, nil
	}
	return nil, p.errorAt(start, "%s is not a boolean expression", what)
}

// checkEqualOperands rejects the NULL literal on either side of = or <>
// (IS NULL is the way to test it) and a TRUE or FALSE literal on the left of
// a non-boolean literal.
func (p *parser) checkEqualOperands(op token, l, r node) error {
	ll, lok := l.(*literalNode)
	rl, rok := r.(*literalNode)
	if (lok && ll.v.isNull()) || (rok && rl.v.isNull()) {
		return p.errorAt(op, "NULL cannot be compared with %s; use IS NULL", op.text)
	}
	if lok && rok && ll.v.kind == kindBool && rl.v.kind != kindBool {
		return p.errorAt(op, "%s cannot be compared with %s", ll.v, rl.v)
	}
	return nil
}

// ordering builds >, >=, < or <= after checking that neither side is a
// non-numeric literal or a boolean expression.
func (p *parser) ordering(op token, l, r node) (node, error) {
	for _, x := range []node{l, r} {
		if lit, ok := x.(*literalNode); ok {
			if !lit.v.isNumber() {
				return nil, p.errorAt(op, "%s cannot be compared with %s", lit.v, op.text)
			}
			continue
		}
		if isBooleanNode(x) {
			return nil, p.errorAt(op, "a condition cannot be compared with %s", op.text)
		}
	}
	return &compareNode{op: op.kind, l: l, r: r}, nil
}

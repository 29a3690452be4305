// Package names holds RocketMQ's rules for topic and group names and the remarks Java
// answers when a name breaks them.
//
// Names arrive from the network and from files, and a topic's name becomes a directory
// (<store>/consumequeue/<topic>): every name is checked here before it is used. The
// allowed characters, ^[%|a-zA-Z0-9_-]+$, cannot spell a path separator or "..", so a
// legal name is always a single local path element.
package names

import "errors"

const (
	// Pattern is the legal characters of topics and groups, as Java prints it.
	Pattern = "^[%|a-zA-Z0-9_-]+$"
	// MaxTopicLength is Java's TopicValidator.TOPIC_MAX_LENGTH; a commitlog record's
	// topic length is one byte, so no longer topic can be stored either.
	MaxTopicLength = 127
	// MaxGroupLength is Java's Validators.CHARACTER_MAX_LENGTH.
	MaxGroupLength = 255
)

// Errors, tested with errors.Is; Error() is the remark Java sends.
var (
	ErrIllegalTopic = errors.New("illegal topic name")
	ErrIllegalGroup = errors.New("illegal group name")
)

// Error is a refused name. Its text is Java's remark, ready for a response.
type Error struct {
	kind   error
	remark string
}

func (e *Error) Error() string { return e.remark }
func (e *Error) Unwrap() error { return e.kind }

// Topic checks a topic name as 4.9.7's TopicValidator.validateTopic does, in its order.
func Topic(name string) error {
	switch {
	case blank(name):
		return &Error{ErrIllegalTopic, "The specified topic is blank."}
	case !legal(name):
		return &Error{ErrIllegalTopic, "The specified topic contains illegal characters, allowing only " + Pattern}
	case len(name) > MaxTopicLength:
		return &Error{ErrIllegalTopic, "The specified topic is longer than topic max length."}
	}
	return nil
}

// Group checks a consumer or producer group name as 4.9.7's client Validators.checkGroup
// does (the broker answers with the same words).
func Group(name string) error {
	switch {
	case blank(name):
		return &Error{ErrIllegalGroup, "the specified group is blank"}
	case len(name) > MaxGroupLength:
		return &Error{ErrIllegalGroup, "the specified group is longer than group max length 255."}
	case !legal(name):
		return &Error{ErrIllegalGroup, "the specified group[" + name + "] contains illegal characters, allowing only " + Pattern}
	}
	return nil
}

// blank is Java's UtilAll.isBlank: empty or only whitespace.
func blank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
		default:
			return false
		}
	}
	return true
}

func legal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '%', c == '|', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

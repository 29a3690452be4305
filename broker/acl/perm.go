package acl

import (
	"strings"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// Perm is a permission set in the bits of Java's acl Permission class.
type Perm byte

const (
	Deny Perm = 1
	Any  Perm = 1 << 1
	Pub  Perm = 1 << 2
	Sub  Perm = 1 << 3
)

// ParsePerm reads a plain_acl.yml permission. Anything but PUB, SUB, PUB|SUB or SUB|PUB
// is DENY, as in Java (no spaces inside "PUB|SUB", case matters).
func ParsePerm(s string) Perm {
	switch strings.TrimSpace(s) {
	case "PUB":
		return Pub
	case "SUB":
		return Sub
	case "PUB|SUB", "SUB|PUB":
		return Pub | Sub
	}
	return Deny
}

// Allows reports whether an owner of p may do what needed asks; DENY beats everything.
func (p Perm) Allows(needed Perm) bool {
	if p&Deny != 0 {
		return false
	}
	if needed&Any != 0 {
		return p&(Pub|Sub) != 0
	}
	return needed&p != 0
}

// Request codes only admin accounts may send (Java's Permission.ADMIN_CODE in 4.9.7).
var adminCodes = map[int16]bool{
	remoting.UpdateAndCreateTopic:             true,
	remoting.UpdateBrokerConfig:               true,
	remoting.DeleteTopicInBroker:              true,
	remoting.UpdateAndCreateSubscriptionGroup: true,
	remoting.DeleteSubscriptionGroup:          true,
}

// NeedsAdmin reports whether code is admin-only.
func NeedsAdmin(code int16) bool { return adminCodes[code] }

// RetryPrefix starts the retry topic of a consumer group; resources under it are the group's.
const RetryPrefix = protocol.RetryGroupTopicPrefix

// GroupResource is the resource key of group: its retry topic, as Java keys groups.
func GroupResource(group string) string { return RetryPrefix + group }

// describe names a resource as Java's PlainAccessResource.printStr does.
func describe(resource string) string {
	if g, ok := strings.CutPrefix(resource, RetryPrefix); ok {
		return "group:" + g
	}
	return "topic:" + resource
}

package acl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// resources are what a request needs: topics, and groups under their retry topic.
type resources struct {
	order []string // first-insertion order, which Java's HashMap keeps within a bucket
	perms map[string]Perm
}

func (r *resources) add(name string, present bool, p Perm) {
	if !present { // Java skips a null resource, but not an empty one
		return
	}
	if r.perms == nil {
		r.perms = map[string]Perm{}
	}
	if _, ok := r.perms[name]; !ok {
		r.order = append(r.order, name)
	}
	r.perms[name] = p
}

func (r *resources) addGroup(group string, present bool) { r.add(GroupResource(group), present, Sub) }

var errNoMessage = errors.New("")

func isGroup(resource string) bool { return strings.HasPrefix(resource, RetryPrefix) }

// resourcesOf lists what req needs, per request code as Java's PlainAccessValidator.parse
// does. Codes it does not list (batch sends, offset queries, admin reads) need no
// resource: a valid signature is enough.
func resourcesOf(req Request) (resources, error) {
	var r resources
	f := req.Fields
	get := func(k string) (string, bool) { v, ok := f[k]; return v, ok }
	switch req.Code {
	case remoting.SendMessage, remoting.SendMessageV2:
		topicKey, groupKey := "topic", "group" // "group" is not a V1 field: Java checks nothing then
		if req.Code == remoting.SendMessageV2 {
			topicKey, groupKey = "b", "a"
		}
		topic, ok := get(topicKey)
		if isGroup(topic) {
			r.addGroup(get(groupKey))
		} else {
			r.add(topic, ok, Pub)
		}
	case remoting.ConsumerSendMsgBack:
		r.addGroup(get("group"))
	case remoting.PullMessage:
		topic, ok := get("topic")
		r.add(topic, ok, Sub)
		r.addGroup(get("consumerGroup"))
	case remoting.QueryMessage:
		topic, ok := get("topic")
		r.add(topic, ok, Sub)
	case remoting.HeartBeat:
		var hb struct {
			ConsumerDataSet []struct {
				GroupName           *string `json:"groupName"`
				SubscriptionDataSet []struct {
					Topic *string `json:"topic"`
				} `json:"subscriptionDataSet"`
			} `json:"consumerDataSet"`
		}
		if len(req.Body) == 0 { // Java fails on a null pointer: an AclException without message
			return r, errNoMessage
		}
		if err := protocol.Decode(req.Body, &hb); err != nil {
			return r, fmt.Errorf("heartbeat body: %v", err)
		}
		for _, c := range hb.ConsumerDataSet {
			r.addGroup(deref(c.GroupName))
			for _, s := range c.SubscriptionDataSet {
				topic, ok := deref(s.Topic)
				r.add(topic, ok, Sub)
			}
		}
	case remoting.UnregisterClient, remoting.GetConsumerListByGroup:
		// Java decodes these headers leniently: a missing field is logged, not refused.
		r.addGroup(get("consumerGroup"))
	case remoting.UpdateConsumerOffset:
		r.addGroup(get("consumerGroup"))
		topic, ok := get("topic")
		r.add(topic, ok, Sub)
	}
	return r, nil
}

func deref(s *string) (string, bool) {
	if s == nil {
		return "", false
	}
	return *s, true
}

// javaHashOrder returns names in the iteration order of a java.util.HashMap they were
// put into in this order, so that of several refused resources the one Java names
// first is named.
func javaHashOrder(names []string) []string {
	if len(names) < 2 {
		return names
	}
	size := 16
	for len(names) > size*3/4 { // the table doubles past a 0.75 load
		size *= 2
	}
	buckets := make([][]string, size)
	for _, n := range names {
		h := javaStringHash(n)
		i := (h ^ h>>16) & uint32(size-1)
		buckets[i] = append(buckets[i], n)
	}
	out := make([]string, 0, len(names))
	for _, b := range buckets {
		out = append(out, b...)
	}
	return out
}

// javaStringHash is String.hashCode: over UTF-16 code units.
func javaStringHash(s string) uint32 {
	var h uint32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + uint32(0xd800+(r>>10))
			h = 31*h + uint32(0xdc00+(r&0x3ff))
			continue
		}
		h = 31*h + uint32(r)
	}
	return h
}

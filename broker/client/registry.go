// Package client tracks the broker's producer and consumer connections: who is in which
// group, with which subscriptions, and when each was last heard from.
package client

import (
	"sort"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// SubscriptionData is one topic subscription as heartbeats carry it.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         []any    `json:"codeSet"` // Java sends numbers, the Go client strings
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`
}

// Channel is one client connection of a group.
type Channel struct {
	Conn       *remoting.Conn
	ClientID   string
	Language   remoting.LanguageCode
	Version    int16
	LastUpdate time.Time
}

// Addr is the client's address.
func (c *Channel) Addr() string { return c.Conn.RemoteAddr() }

// ConsumerGroup is a consumer group's live state.
type ConsumerGroup struct {
	Name             string
	ConsumeType      string // CONSUME_ACTIVELY (pull) or CONSUME_PASSIVELY (push)
	MessageModel     string // CLUSTERING or BROADCASTING
	ConsumeFromWhere string
	Subscriptions    map[string]SubscriptionData // by topic
	Channels         map[*remoting.Conn]*Channel
	LastUpdate       time.Time
}

func (g *ConsumerGroup) clone() *ConsumerGroup {
	c := *g
	c.Subscriptions = make(map[string]SubscriptionData, len(g.Subscriptions))
	for k, v := range g.Subscriptions {
		c.Subscriptions[k] = v
	}
	c.Channels = make(map[*remoting.Conn]*Channel, len(g.Channels))
	for k, v := range g.Channels {
		ch := *v
		c.Channels[k] = &ch
	}
	return &c
}

// ClientIDs returns the group's client ids, sorted.
func (g *ConsumerGroup) ClientIDs() []string {
	out := make([]string, 0, len(g.Channels))
	for _, ch := range g.Channels {
		out = append(out, ch.ClientID)
	}
	sort.Strings(out)
	return out
}

// Registry holds producer and consumer groups. Safe for concurrent use.
type Registry struct {
	mu        sync.Mutex
	consumers map[string]*ConsumerGroup
	producers map[string]map[*remoting.Conn]*Channel
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{consumers: map[string]*ConsumerGroup{}, producers: map[string]map[*remoting.Conn]*Channel{}}
}

// ConsumerRegistration is what a heartbeat says about one consumer group.
type ConsumerRegistration struct {
	Group, ConsumeType, MessageModel, ConsumeFromWhere string
	Subscriptions                                      []SubscriptionData
}

// RegisterConsumer records ch in the group. It reports whether the group's membership
// changed (a new channel), which warrants NOTIFY_CONSUMER_IDS_CHANGED, and whether the
// subscriptions changed.
func (r *Registry) RegisterConsumer(reg ConsumerRegistration, ch Channel) (membersChanged, subsChanged bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.consumers[reg.Group]
	if g == nil {
		g = &ConsumerGroup{Name: reg.Group, Subscriptions: map[string]SubscriptionData{}, Channels: map[*remoting.Conn]*Channel{}}
		r.consumers[reg.Group] = g
	}
	g.ConsumeType, g.MessageModel, g.ConsumeFromWhere = reg.ConsumeType, reg.MessageModel, reg.ConsumeFromWhere
	g.LastUpdate = ch.LastUpdate
	if old, ok := g.Channels[ch.Conn]; ok {
		old.LastUpdate = ch.LastUpdate
		if old.ClientID != ch.ClientID {
			old.ClientID = ch.ClientID
			membersChanged = true
		}
	} else {
		c := ch
		g.Channels[ch.Conn] = &c
		membersChanged = true
	}
	next := make(map[string]SubscriptionData, len(reg.Subscriptions))
	for _, s := range reg.Subscriptions {
		if old, ok := g.Subscriptions[s.Topic]; ok && old.SubVersion > s.SubVersion && old.SubString == s.SubString {
			s = old
		}
		next[s.Topic] = s
	}
	if len(next) != len(g.Subscriptions) {
		subsChanged = true
	} else {
		for t, s := range next {
			if old, ok := g.Subscriptions[t]; !ok || old.SubString != s.SubString || old.ExpressionType != s.ExpressionType {
				subsChanged = true
			}
		}
	}
	g.Subscriptions = next
	return membersChanged, subsChanged
}

// RegisterProducer records ch in a producer group.
func (r *Registry) RegisterProducer(group string, ch Channel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.producers[group]
	if m == nil {
		m = map[*remoting.Conn]*Channel{}
		r.producers[group] = m
	}
	if old, ok := m[ch.Conn]; ok {
		old.LastUpdate = ch.LastUpdate
		return
	}
	c := ch
	m[ch.Conn] = &c
}

// UnregisterConsumer removes conn from group; it reports whether it was a member.
func (r *Registry) UnregisterConsumer(group string, conn *remoting.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeConsumerLocked(group, conn)
}

func (r *Registry) removeConsumerLocked(group string, conn *remoting.Conn) bool {
	g := r.consumers[group]
	if g == nil {
		return false
	}
	if _, ok := g.Channels[conn]; !ok {
		return false
	}
	delete(g.Channels, conn)
	if len(g.Channels) == 0 {
		delete(r.consumers, group)
	}
	return true
}

// UnregisterProducer removes conn from group.
func (r *Registry) UnregisterProducer(group string, conn *remoting.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.producers[group]; m != nil {
		delete(m, conn)
		if len(m) == 0 {
			delete(r.producers, group)
		}
	}
}

// RemoveConn drops conn from every group (the connection closed). It returns the
// consumer groups that lost a member and still have members.
func (r *Registry) RemoveConn(conn *remoting.Conn) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var changed []string
	for name := range r.consumers {
		if r.removeConsumerLocked(name, conn) {
			if _, still := r.consumers[name]; still {
				changed = append(changed, name)
			}
		}
	}
	for group, m := range r.producers {
		delete(m, conn)
		if len(m) == 0 {
			delete(r.producers, group)
		}
	}
	return changed
}

// Expired returns the connections not heard from since before deadline.
func (r *Registry) Expired(deadline time.Time) []*remoting.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[*remoting.Conn]bool{}
	var out []*remoting.Conn
	add := func(ch *Channel) {
		if ch.LastUpdate.Before(deadline) && !seen[ch.Conn] {
			seen[ch.Conn] = true
			out = append(out, ch.Conn)
		}
	}
	for _, g := range r.consumers {
		for _, ch := range g.Channels {
			add(ch)
		}
	}
	for _, m := range r.producers {
		for _, ch := range m {
			add(ch)
		}
	}
	return out
}

// Consumer returns a copy of group's state.
func (r *Registry) Consumer(group string) (*ConsumerGroup, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.consumers[group]
	if !ok {
		return nil, false
	}
	return g.clone(), true
}

// Subscription returns group's subscription to topic.
func (r *Registry) Subscription(group, topic string) (SubscriptionData, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.consumers[group]
	if !ok {
		return SubscriptionData{}, false
	}
	s, ok := g.Subscriptions[topic]
	return s, ok
}

// ConsumerGroups returns the online consumer group names, sorted.
func (r *Registry) ConsumerGroups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.consumers))
	for k := range r.consumers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// GroupsSubscribing returns the online groups subscribed to topic.
func (r *Registry) GroupsSubscribing(topic string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name, g := range r.consumers {
		if _, ok := g.Subscriptions[topic]; ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Producers returns copies of a producer group's channels.
func (r *Registry) Producers(group string) []Channel {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Channel
	for _, ch := range r.producers[group] {
		out = append(out, *ch)
	}
	return out
}

// ProducerByClientID returns a copy of the producer channel that clientID registered,
// as Java's ProducerManager.findChannel does for request-reply. A client that
// reconnected may briefly have two; the one heard from last is the live one.
func (r *Registry) ProducerByClientID(clientID string) (Channel, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var found *Channel
	for _, m := range r.producers {
		for _, ch := range m {
			if ch.ClientID == clientID && (found == nil || ch.LastUpdate.After(found.LastUpdate)) {
				found = ch
			}
		}
	}
	if found == nil {
		return Channel{}, false
	}
	return *found, true
}

// ConnRoles counts distinct connections by role: Consumer those in a consumer group,
// Producer those in a producer group and no consumer group.
type ConnRoles struct{ Producer, Consumer int }

// ConnRoles returns the connections by role (metrics).
func (r *Registry) ConnRoles() ConnRoles {
	r.mu.Lock()
	defer r.mu.Unlock()
	consumers := map[*remoting.Conn]bool{}
	for _, g := range r.consumers {
		for c := range g.Channels {
			consumers[c] = true
		}
	}
	producers := map[*remoting.Conn]bool{}
	for _, m := range r.producers {
		for c := range m {
			if !consumers[c] {
				producers[c] = true
			}
		}
	}
	return ConnRoles{Producer: len(producers), Consumer: len(consumers)}
}

// Counts returns the number of producer and consumer connections, for runtime info.
func (r *Registry) Counts() (producers, consumers int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.producers {
		producers += len(m)
	}
	for _, g := range r.consumers {
		consumers += len(g.Channels)
	}
	return producers, consumers
}

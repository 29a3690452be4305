package metadata

import (
	"path/filepath"
	"sort"
	"sync"

	"github.com/openrmq/rocketmq-operator/pkg/names"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// SubscriptionGroupConfig is a consumer group's broker-side settings (the wire type).
type SubscriptionGroupConfig = protocol.SubscriptionGroupConfig

// NewSubscriptionGroupConfig returns Java's defaults for group.
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return protocol.NewSubscriptionGroupConfig(group)
}

type groupsFile struct {
	SubscriptionGroupTable map[string]*SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            protocol.DataVersion                `json:"dataVersion"`
}

// Groups is the subscription group table, persisted as subscriptionGroup.json.
type Groups struct {
	path string

	mu      sync.RWMutex
	table   map[string]*SubscriptionGroupConfig
	version protocol.DataVersion
}

// LoadGroups builds the system groups and loads <dir>/subscriptionGroup.json over them.
func LoadGroups(dir string) (*Groups, error) {
	g := &Groups{
		path:    filepath.Join(dir, SubscriptionGroupFile),
		table:   map[string]*SubscriptionGroupConfig{},
		version: protocol.NewDataVersion(),
	}
	for _, name := range names.SystemGroups {
		c := NewSubscriptionGroupConfig(name)
		if name == "TOOLS_CONSUMER" || name == "FILTERSRV_CONSUMER" || name == "SELF_TEST_C_GROUP" {
			c.ConsumeBroadcastEnable = true
		}
		g.table[name] = &c
	}
	var file groupsFile
	found, err := loadJSON(g.path, &file, func() { file = groupsFile{} })
	if err != nil {
		return nil, err
	}
	if found {
		copyNonNil(g.table, legalOnly(g.path, file.SubscriptionGroupTable, names.Group))
		if file.DataVersion.Timestamp != 0 {
			g.version = file.DataVersion
		}
	}
	return g, nil
}

// Get returns group's config.
func (g *Groups) Get(group string) (SubscriptionGroupConfig, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	c, ok := g.table[group]
	if !ok {
		return SubscriptionGroupConfig{}, false
	}
	return *c, true
}

// GetOrCreate returns group's config, creating it with the defaults when autoCreate.
func (g *Groups) GetOrCreate(group string, autoCreate bool) (SubscriptionGroupConfig, bool, error) {
	if c, ok := g.Get(group); ok || !autoCreate {
		return c, ok, nil
	}
	if err := names.Group(group); err != nil {
		return SubscriptionGroupConfig{}, false, err
	}
	c := NewSubscriptionGroupConfig(group)
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.table[group]; ok {
		return *old, true, nil
	}
	g.table[group] = &c
	return c, true, g.commitLocked()
}

// Put creates or replaces a group config.
func (g *Groups) Put(c SubscriptionGroupConfig) error {
	if err := names.Group(c.GroupName); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.table[c.GroupName] = &c
	return g.commitLocked()
}

// Delete removes a group; it reports whether it existed.
func (g *Groups) Delete(group string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.table[group]; !ok {
		return false, nil
	}
	delete(g.table, group)
	return true, g.commitLocked()
}

// Len is the number of subscription groups.
func (g *Groups) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.table)
}

// NameSet fills dst (cleared first) with the group names (metrics).
func (g *Groups) NameSet(dst map[string]bool) {
	clear(dst)
	g.mu.RLock()
	defer g.mu.RUnlock()
	for k := range g.table {
		dst[k] = true
	}
}

// Names returns the group names, sorted.
func (g *Groups) Names() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]string, 0, len(g.table))
	for k := range g.table {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Encode returns the table as GET_ALL_SUBSCRIPTIONGROUP_CONFIG and the file show it.
func (g *Groups) Encode() []byte {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.encodeLocked()
}

func (g *Groups) encodeLocked() []byte {
	return protocol.MustEncode(groupsFile{SubscriptionGroupTable: g.table, DataVersion: g.version})
}

// Persist writes the table.
func (g *Groups) Persist() error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return WriteFileAtomic(g.path, g.encodeLocked())
}

// commitLocked bumps the version and persists. Lock must be held.
func (g *Groups) commitLocked() error {
	g.version = g.version.Next()
	return WriteFileAtomic(g.path, g.encodeLocked())
}

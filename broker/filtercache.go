package broker

import (
	"sync"

	"github.com/openrmq/rocketmq-operator/broker/filter"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// filterCacheMax bounds the expressions a filterCache keeps: consumers send their
// subscriptions with every pull, so a client could otherwise grow it without end.
const filterCacheMax = 4096

// filterCache keeps each subscription expression compiled into its store filter, so
// that a pull looks its expression up instead of compiling it again (a SQL92 expression
// costs a parse; even a tag expression a split, a hash per tag and the filter's funcs).
// Compiled filters are immutable and shared by every pull. Past filterCacheMax
// expressions the cache starts over.
type filterCache struct {
	mu sync.RWMutex
	m  map[filterKey]compiledFilter
}

type filterKey struct{ exprType, expr string }

// compiledFilter is what an expression compiles to: the store filter (nil: every
// message) or the compile error.
type compiledFilter struct {
	f   store.MessageFilter
	err error
}

func (c *filterCache) get(exprType, expr string) (store.MessageFilter, error) {
	k := filterKey{exprType, expr}
	c.mu.RLock()
	cf, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return cf.f, cf.err
	}
	cf.f, cf.err = compileFilter(exprType, expr)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= filterCacheMax {
		c.m = make(map[filterKey]compiledFilter)
	}
	c.m[k] = cf
	c.mu.Unlock()
	return cf.f, cf.err
}

// compileFilter builds the store filter of an expression: the tag hashes for a TAG
// expression (nil when it matches everything), the expression over each record's
// properties for SQL92.
func compileFilter(exprType, expr string) (store.MessageFilter, error) {
	f, err := filter.New(exprType, expr)
	if err != nil {
		return nil, err
	}
	if tf, ok := f.(filter.TagFilter); ok {
		if tf.All() {
			return nil, nil
		}
		return store.FilterFuncs{Tags: tf.MatchTagsCode}, nil
	}
	return store.FilterFuncs{Tags: f.MatchTagsCode, Record: func(rec []byte) bool {
		v, err := message.ParseRecord(rec)
		if err != nil {
			return false
		}
		return f.MatchProperties(message.DecodeProperties(string(v.Properties())))
	}}, nil
}

package ha

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// An epoch is one term of mastership in a group. The operator numbers them when it fails
// a group over (masterEpoch); a broker that becomes master of epoch N records N with the
// commitlog offset its first write of the term will have. Every broker of the group keeps
// the history it knows, so that a broker rejoining as a slave can tell where its
// commitlog parted from the master's: bytes it holds from a term the master never had
// are cut before it replicates.
//
// Invariant of a History: epochs strictly increase and start offsets never decrease.
// A group that never failed over has an empty history (epoch 0 from offset 0): 4.x
// masters and slaves behave as before.
type Epoch struct {
	Epoch       int64 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
}

// History is a group's epochs, oldest first.
type History []Epoch

// Last is the newest epoch; the zero Epoch for an empty history.
func (h History) Last() Epoch {
	if len(h) == 0 {
		return Epoch{}
	}
	return h[len(h)-1]
}

// Begin returns h with epoch e begun at offset: entries starting past offset are dropped
// (a term this broker learnt of but never holds the bytes of). e must be above h's last
// epoch.
func (h History) Begin(e, offset int64) (History, error) {
	if last := h.Last(); e <= last.Epoch {
		return nil, fmt.Errorf("ha: epoch %d is not above the last recorded epoch %d", e, last.Epoch)
	}
	out := make(History, 0, len(h)+1)
	for _, x := range h {
		if x.StartOffset <= offset {
			out = append(out, x)
		}
	}
	return append(out, Epoch{Epoch: e, StartOffset: offset}), nil
}

// Valid reports whether h holds its invariant.
func (h History) Valid() error {
	for i := 1; i < len(h); i++ {
		if h[i].Epoch <= h[i-1].Epoch || h[i].StartOffset < h[i-1].StartOffset {
			return fmt.Errorf("ha: epoch history out of order at %d: %v after %v", i, h[i], h[i-1])
		}
	}
	for _, x := range h {
		if x.Epoch < 0 || x.StartOffset < 0 {
			return fmt.Errorf("ha: negative epoch or offset in %v", x)
		}
	}
	return nil
}

// String is the compact form GET_BROKER_RUNTIME_INFO carries: "epoch:startOffset,...".
func (h History) String() string {
	parts := make([]string, len(h))
	for i, x := range h {
		parts[i] = strconv.FormatInt(x.Epoch, 10) + ":" + strconv.FormatInt(x.StartOffset, 10)
	}
	return strings.Join(parts, ",")
}

// ParseHistory reads String's form; "" is the empty history.
func ParseHistory(s string) (History, error) {
	if s == "" {
		return nil, nil
	}
	var h History
	for _, part := range strings.Split(s, ",") {
		es, ofs, ok := strings.Cut(part, ":")
		e, err1 := strconv.ParseInt(es, 10, 64)
		o, err2 := strconv.ParseInt(ofs, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("ha: bad epoch entry %q", part)
		}
		h = append(h, Epoch{Epoch: e, StartOffset: o})
	}
	return h, h.Valid()
}

// ErrStaleMaster: the master's newest epoch is older than the slave's. It is an old
// master that came back; a slave never follows it.
var ErrStaleMaster = errors.New("ha: the master's epoch is older than this broker's")

// Divergence is where a broker holding local's history and a commitlog ending at end
// must cut before it replicates from a master holding master's: the start of the first
// master epoch after local's last one, when the broker has bytes past it (they were
// written in a term the master does not share: an old master's unreplicated tail). cut
// is false when nothing is to be cut.
func Divergence(local, master History, end int64) (offset int64, cut bool, err error) {
	mine := local.Last().Epoch
	if master.Last().Epoch < mine {
		return 0, false, fmt.Errorf("%w: master at epoch %d, this broker at %d", ErrStaleMaster, master.Last().Epoch, mine)
	}
	for _, x := range master {
		if x.Epoch > mine {
			return x.StartOffset, end > x.StartOffset, nil
		}
	}
	return 0, false, nil
}

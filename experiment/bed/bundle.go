package bed

import (
	"context"
	"fmt"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
)

// The bundle preset (sw1 and sw2 joined by four links) of the cells and
// FEC-over-cells experiments: its links, the loss classes they run with and
// how the gray links are chosen.

// BundleLinks are the bundle preset's link ports.
var BundleLinks = []string{"link0", "link1", "link2", "link3"}

// ClassesDSCP is the DSCP of the class-1 flow: EF (46), class selector 5,
// bound to loss class 1 by ClassesMap.
const (
	ClassesDSCP = 46
	ClassesMap  = "5=1"
)

// NormalizeGray fills in and checks the gray links of the loss-class
// experiments: links 1-3 of the bundle (default all three) lose loss
// (default 10⁻², in bursts of burst frames, default 1: Bernoulli), which
// must put them in loss class 3; link0 stays clean, for class 1.
func NormalizeGray(what string, loss, burst *float64, gray *[]int) error {
	if *loss == 0 {
		*loss = 1e-2
	}
	if *burst == 0 {
		*burst = 1
	}
	if len(*gray) == 0 {
		*gray = []int{1, 2, 3}
	}
	for _, l := range *gray {
		if l < 1 || l >= len(BundleLinks) {
			return fmt.Errorf("%s: --gray %d: the gray links are 1-3 (link0 stays clean, for class 1)", what, l)
		}
	}
	if err := bpf.Loss(*loss, *burst, 1).Validate(); err != nil {
		return fmt.Errorf("%s: --loss %g --burst %g: %w", what, *loss, *burst, err)
	}
	if *loss <= 1e-3 || *loss > 1e-1 {
		return fmt.Errorf("%s: --loss %g: the gray links must fall in loss class 3 (above 1e-3, at most 1e-1)", what, *loss)
	}
	return nil
}

// CellsDoc is the part of a cells dataplane's /stats.json the cells and FEC-over-cells experiments read.
type CellsDoc struct {
	Cells struct {
		UsableLinks    int    `json:"usable_links"`
		ReasmTimeouts  uint64 `json:"reasm_timeouts"`
		ReasmDiscards  uint64 `json:"reasm_discarded"`
		ReasmDelivered uint64 `json:"reasm_delivered"`
		Links          []struct {
			Name            string `json:"name"`
			Usable          bool   `json:"usable"`
			Exclusions      uint64 `json:"exclusions"`
			LastExclusion   string `json:"last_exclusion"`
			LastExclusionAt int64  `json:"last_exclusion_unix_ns"`
			// Loss classes (cells classes): the class the link serves,
			// the bytes sent, the cell bytes sent per loss class.
			Class        uint8    `json:"loss_class"`
			TxBytes      uint64   `json:"tx_bytes"`
			TxClassBytes []uint64 `json:"tx_class_bytes"`
			LG           *struct {
				HandedBack uint64 `json:"handed_back"`
				Recovered  uint64 `json:"recovered"`
				RetxCopies uint64 `json:"retx_copies"`
				GiveUps    uint64 `json:"give_ups"`
			} `json:"link_layer"`
		} `json:"links"`
		Hosts []struct {
			QueueDrops uint64 `json:"queue_drops"`
		} `json:"hosts"`
		Node struct {
			Resprayed    uint64 `json:"Resprayed"`
			RespraysDrop uint64 `json:"RespraysDrop"`
			VOQDrops     uint64 `json:"VOQDrops"`
		} `json:"node"`
		Reasm struct {
			Duplicates uint64 `json:"Duplicates"`
		} `json:"reasm"`
	} `json:"cells"`
}

// WaitClasses waits until sw1 shows the gray links in class 3 and the
// others in class 1 (with classes; without, it waits for nothing) and
// returns sw1's statistics then.
func WaitClasses(ctx context.Context, e *Env, classes bool, gray map[string]bool, limit time.Duration) (CellsDoc, error) {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var s CellsDoc
	for {
		err := FetchStats(wctx, e.NS("sw1"), &s)
		ok := err == nil && len(s.Cells.Links) == len(BundleLinks)
		for _, l := range s.Cells.Links {
			want := uint8(1)
			if gray[l.Name] {
				want = 3
			}
			ok = ok && (!classes || l.Class == want)
		}
		if ok {
			return s, nil
		}
		select {
		case <-wctx.Done():
			return s, fmt.Errorf("sw1: the links' loss classes did not settle within %v (gray links in class 3, the others in class 1): %+v", limit, s.Cells.Links)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
